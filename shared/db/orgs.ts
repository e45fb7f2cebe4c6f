// Organizations and their console users.
import { newId } from '../ids.js';
import type { Db } from './pool.js';

export interface OrgRow {
  id: string;
  name: string;
  sending_paused: boolean;
  sending_paused_reason: string | null;
  rate_limit_per_second: number;
  rate_limit_burst: number;
  track_opens: boolean;
  track_clicks: boolean;
  daily_cap: number | null;
  alert_rules: unknown[];
  created_at: Date;
  updated_at: Date;
}

export async function insertOrg(db: Db, name: string): Promise<OrgRow> {
  const [row] = await db<OrgRow[]>`
    insert into organizations (id, name) values (${newId('org')}, ${name}) returning *`;
  return row!;
}

export async function getOrg(db: Db, id: string): Promise<OrgRow | null> {
  const [row] = await db<OrgRow[]>`select * from organizations where id = ${id}`;
  return row ?? null;
}

export interface UserRow {
  id: string;
  org_id: string;
  email: string;
  role: 'member' | 'admin';
  created_at: Date;
}

export async function insertUser(
  db: Db,
  u: { orgId: string; email: string; role: 'member' | 'admin'; passwordHash: string },
): Promise<UserRow> {
  const [row] = await db<UserRow[]>`
    insert into users (id, org_id, email, role, password_hash)
    values (${newId('usr')}, ${u.orgId}, ${u.email}, ${u.role}, ${u.passwordHash})
    returning id, org_id, email, role, created_at`;
  return row!;
}

export async function countOrgs(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from organizations`;
  return row!.n;
}

/** Sets an organization's per-key request rate (callers then invalidate the org in the key cache). */
export async function setOrgRateLimit(db: Db, orgId: string, limit: { perSecond: number; burst: number }) {
  await db`
    update organizations
       set rate_limit_per_second = ${limit.perSecond}, rate_limit_burst = ${limit.burst}, updated_at = now()
     where id = ${orgId}`;
}
