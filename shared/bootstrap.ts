// Creating an organization with its first admin user and ADMIN key: used by `tern org create`
// and by `npm start`'s demo organization (which adds the demo domain and a test key). One
// transaction: every row or none.
import type { Config } from './config.js';
import { insertDomain } from './db/domains.js';
import { mintKey } from './keys.js';
import { insertOrg, insertUser } from './db/orgs.js';
import type { Sql, TxSql } from './db/pool.js';
import { DEMO_DOMAIN } from './domains/demo.js';
import { buildRecords } from './domains/records.js';
import { generateDkimKey } from './domains/setup.js';
import { secretBox } from './secrets.js';
import { generatePassword, hashPassword } from './passwords.js';

export interface CreatedOrganization {
  organization: { id: string; name: string };
  user: { id: string; email: string; password: string };
  key: { id: string; token: string; permission: 'ADMIN'; mode: 'live' };
}

export interface CreatedDemo extends CreatedOrganization {
  domain: { id: string; name: string };
  testKey: { id: string; token: string; permission: 'SEND'; mode: 'test' };
}

type OrgInput = { name: string; adminEmail: string; password?: string };

async function createIn(tx: TxSql, brand: string, input: OrgInput, password: string, passwordHash: string) {
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
    key: { id: key.id, token, permission: 'ADMIN' as const, mode: 'live' as const },
  };
}

export async function createOrganization(sql: Sql, brand: string, input: OrgInput): Promise<CreatedOrganization> {
  const password = input.password ?? generatePassword();
  const passwordHash = await hashPassword(password);
  return await sql.begin((tx) => createIn(tx, brand, input, password, passwordHash));
}

/**
 * The development launcher's first run (DESIGN §12): organization "Demo", its console admin and
 * ADMIN key, the verified demo domain `demo.test` (flagged `demo`: test keys only, never leaves
 * the machine) and a SEND test key.
 */
export async function createDemoOrganization(
  sql: Sql,
  config: Pick<Config, 'brand' | 'mxHost' | 'secretKey'>,
  input: OrgInput,
): Promise<CreatedDemo> {
  const password = input.password ?? generatePassword();
  const passwordHash = await hashPassword(password);
  const dkim = await generateDkimKey(secretBox(config));
  return await sql.begin(async (tx) => {
    const created = await createIn(tx, config.brand, input, password, passwordHash);
    const orgId = created.organization.id;
    const domain = await insertDomain(tx, {
      orgId,
      name: DEMO_DOMAIN,
      status: 'verified',
      demo: true,
      records: buildRecords(DEMO_DOMAIN, config.mxHost, dkim.publicKeyBase64),
      dkimPrivateKey: dkim.privateKeySealed,
      dkimPublicKey: dkim.publicKeyBase64,
    });
    const { key, token } = await mintKey(tx, config.brand, {
      orgId,
      name: 'Test key',
      mode: 'test',
      permission: 'SEND',
      domainIds: [],
      createdBy: created.user.id,
    });
    return {
      ...created,
      domain: { id: domain.id, name: domain.name },
      testKey: { id: key.id, token, permission: 'SEND', mode: 'test' },
    };
  });
}
