// Creating an organization with its first admin user and ADMIN key: used by `tern org create`
// and by `npm start`'s demo organization. One transaction: all three rows or none.
import { mintKey } from './db/keys.js';
import { insertOrg, insertUser } from './db/orgs.js';
import type { Sql } from './db/pool.js';
import { generatePassword, hashPassword } from './passwords.js';

export interface CreatedOrganization {
  organization: { id: string; name: string };
  user: { id: string; email: string; password: string };
  key: { id: string; token: string; permission: 'ADMIN'; mode: 'live' };
}

export async function createOrganization(
  sql: Sql,
  brand: string,
  input: { name: string; adminEmail: string; password?: string },
): Promise<CreatedOrganization> {
  const password = input.password ?? generatePassword();
  const passwordHash = await hashPassword(password);
  return await sql.begin(async (tx) => {
    const org = await insertOrg(tx, input.name);
    const user = await insertUser(tx, { orgId: org.id, email: input.adminEmail, role: 'admin', passwordHash });
    const { key, token } = await mintKey(tx, brand, {
      orgId: org.id,
      name: 'Admin key',
      mode: 'live',
      permission: 'ADMIN',
      domainIds: [],
      createdBy: user.id,
    });
    return {
      organization: { id: org.id, name: org.name },
      user: { id: user.id, email: user.email, password },
      key: { id: key.id, token, permission: 'ADMIN', mode: 'live' },
    };
  });
}
