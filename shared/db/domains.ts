// Sending domains of an organization.
import { newId } from '../ids.js';
import type { Db } from './pool.js';

export type DomainStatus = 'pending' | 'verified' | 'failed';

export interface DomainRow {
  id: string;
  org_id: string;
  name: string;
  status: DomainStatus;
  records: unknown[];
  dkim_selector: string;
  dkim_private_key: string | null;
  dkim_public_key: string | null;
  track_opens: boolean | null;
  track_clicks: boolean | null;
  verified_at: Date | null;
  last_checked_at: Date | null;
  created_at: Date;
}

export interface NewDomain {
  orgId: string;
  name: string;
  status?: DomainStatus;
  records?: unknown[];
  dkimPrivateKey?: string | null;
  dkimPublicKey?: string | null;
}

export async function insertDomain(db: Db, d: NewDomain): Promise<DomainRow> {
  const status = d.status ?? 'pending';
  const [row] = await db<DomainRow[]>`
    insert into domains (id, org_id, name, status, records, dkim_private_key, dkim_public_key, verified_at)
    values (${newId('dom')}, ${d.orgId}, ${d.name}, ${status}, ${db.json((d.records ?? []) as never)},
            ${d.dkimPrivateKey ?? null}, ${d.dkimPublicKey ?? null},
            ${status === 'verified' ? new Date() : null})
    returning *`;
  return row!;
}

export async function listOrgDomains(db: Db, orgId: string): Promise<DomainRow[]> {
  return await db<DomainRow[]>`select * from domains where org_id = ${orgId} order by name`;
}

/** Resolves names or ids of domains of one org; returns the rows found, in input order. */
export async function findOrgDomains(db: Db, orgId: string, refs: string[]): Promise<Map<string, DomainRow>> {
  const rows = await db<DomainRow[]>`
    select * from domains where org_id = ${orgId} and (id = any(${refs}) or name = any(${refs}))`;
  const byRef = new Map<string, DomainRow>();
  for (const r of rows) {
    byRef.set(r.id, r);
    byRef.set(r.name, r);
  }
  return byRef;
}
