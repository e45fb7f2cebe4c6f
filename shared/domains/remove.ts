// Deleting a sending domain (the API's DELETE /domains/{id} and the console's Delete): refused
// while messages of the domain still need its DKIM key, since the delete cascades to them.
import { countUnfinishedDomainEmails, deleteDomain, type DomainRow } from '../db/domains.js';
import type { Db } from '../db/pool.js';
import { ApiError, notFound } from '../errors.js';

export async function removeDomain(sql: Db, orgId: string, d: Pick<DomainRow, 'id' | 'name'>): Promise<void> {
  const unfinished = await countUnfinishedDomainEmails(sql, d.id);
  if (unfinished > 0) {
    throw new ApiError(
      'invalid_state',
      `${d.name} has ${unfinished} message(s) not yet sent; cancel them or wait before deleting the domain`,
    );
  }
  if (!(await deleteDomain(sql, orgId, d.id))) throw notFound('Domain');
}
