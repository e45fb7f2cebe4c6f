// The columns that hold secrets at rest (shared/secrets.ts) and the SQL of sealing them again
// (shared/secrets-seal.ts): a batch of values not yet sealed as wanted, and a conditional write.
import type { SecretPurpose } from '../secrets.js';
import type { Db } from './pool.js';

export interface SecretColumn {
  table: 'webhooks' | 'domains';
  column: 'signing_secret' | 'previous_secret' | 'dkim_private_key';
  purpose: SecretPurpose;
}

export const SECRET_COLUMNS: readonly SecretColumn[] = [
  { table: 'webhooks', column: 'signing_secret', purpose: 'webhook-secret' },
  { table: 'webhooks', column: 'previous_secret', purpose: 'webhook-secret' },
  { table: 'domains', column: 'dkim_private_key', purpose: 'dkim-key' },
];

/** Up to `limit` values of the column (in id order after `after`) that do not start with `prefix`. */
export async function secretsNotSealedAs(
  db: Db,
  c: SecretColumn,
  prefix: string,
  after: string,
  limit: number,
): Promise<{ id: string; value: string }[]> {
  return await db<{ id: string; value: string }[]>`
    select id, ${db(c.column)} as value from ${db(c.table)}
    where ${db(c.column)} is not null and ${db(c.column)} not like ${`${prefix}%`} and id > ${after}
    order by id limit ${limit}`;
}

/** Writes the sealed value if the row still holds what was read; true when it did. */
export async function replaceSecret(
  db: Db,
  c: SecretColumn,
  id: string,
  was: string,
  sealed: string,
): Promise<boolean> {
  const done = await db`
    update ${db(c.table)} set ${db(c.column)} = ${sealed}
    where id = ${id} and ${db(c.column)} = ${was}`;
  return done.count > 0;
}
