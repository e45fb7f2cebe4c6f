// Seeds an organization with domains and keys straight through the shared SQL functions.
import { createOrganization, type CreatedOrganization } from '../../shared/bootstrap.js';
import { insertDomain, type DomainRow } from '../../shared/db/domains.js';
import { mintKey } from '../../shared/keys.js';
import type { Sql } from '../../shared/db/pool.js';
import type { Mode, Permission } from '../../shared/keys.js';

export interface SeededOrg extends CreatedOrganization {
  domains: Record<string, DomainRow>;
  mint(k: {
    permission: Permission;
    mode?: Mode;
    domains?: string[];
    name?: string;
  }): Promise<{ id: string; token: string }>;
}

let counter = 0;

export async function seedOrg(
  sql: Sql,
  opts: { brand?: string; domains?: { name: string; verified?: boolean }[] } = {},
): Promise<SeededOrg> {
  const brand = opts.brand ?? 'tern';
  const n = ++counter;
  const created = await createOrganization(sql, brand, {
    name: `Org ${n}`,
    adminEmail: `admin${n}-${Date.now()}@example.test`,
  });
  const domains: Record<string, DomainRow> = {};
  for (const d of opts.domains ?? []) {
    domains[d.name] = await insertDomain(sql, {
      orgId: created.organization.id,
      name: d.name,
      status: d.verified === false ? 'pending' : 'verified',
    });
  }
  return {
    ...created,
    domains,
    async mint(k) {
      const domainIds = (k.domains ?? []).map((name) => {
        const d = domains[name];
        if (!d) throw new Error(`seed: unknown domain ${name}`);
        return d.id;
      });
      const { key, token } = await mintKey(sql, brand, {
        orgId: created.organization.id,
        name: k.name ?? `${k.permission} ${k.mode ?? 'live'}`,
        mode: k.mode ?? 'live',
        permission: k.permission,
        domainIds,
        createdBy: null,
      });
      return { id: key.id, token };
    },
  };
}
