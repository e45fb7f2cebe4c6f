// Organizations and their console users.
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

/** One entry of organizations.alert_rules (DESIGN §5): set by PATCH /organization, checked by delivery. */
export interface AlertRule {
  metric: 'bounce' | 'complaint';
  /** Percent of the window's sent messages, > 0 and ≤ 100. */
  threshold: number;
  /** The rule is not evaluated below this many sent messages in the window. */
  min_volume: number;
  window_days: number;
  action: 'pause' | 'notify';
}

export interface OrgRow {
  id: string;
  name: string;
  /** Admins must sign in with a second factor (console). */
  require_admin_totp: boolean;
  sending_paused: boolean;
  sending_paused_reason: string | null;
  rate_limit_per_second: number;
  rate_limit_burst: number;
  track_opens: boolean;
  track_clicks: boolean;
  daily_cap: number | null;
  alert_rules: unknown[];
  retention_content_days: number;
  retention_events_days: number;
  retention_request_log_days: number;
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

/** Columns of the organization settings that PATCH /organization may change. */
export interface OrgSettingsPatch {
  name?: string;
  sending_paused?: boolean;
  sending_paused_reason?: string | null;
  track_opens?: boolean;
  track_clicks?: boolean;
  rate_limit_per_second?: number;
  rate_limit_burst?: number;
  daily_cap?: number | null;
  alert_rules?: unknown[];
  retention_content_days?: number | undefined;
  retention_events_days?: number | undefined;
  retention_request_log_days?: number | undefined;
}

/** Locks the row for a read-modify-write of its settings (call inside a transaction). */
export async function getOrgForUpdate(db: Db, id: string): Promise<OrgRow | null> {
  const [row] = await db<OrgRow[]>`select * from organizations where id = ${id} for update`;
  return row ?? null;
}

export async function updateOrgSettings(db: Db, id: string, patch: OrgSettingsPatch): Promise<OrgRow | null> {
  const values: Record<string, unknown> = { ...patch };
  if (patch.alert_rules !== undefined) values.alert_rules = jsonParam(db, patch.alert_rules);
  const columns = Object.keys(values).filter((c) => values[c] !== undefined);
  if (columns.length === 0) return await getOrg(db, id);
  const [row] = await db<OrgRow[]>`
    update organizations set ${db(values as Record<string, never>, columns)}, updated_at = now()
    where id = ${id} returning *`;
  return row ?? null;
}

/** Sets an organization's per-key request rate (callers then invalidate the org in the key cache). */
export async function setOrgRateLimit(db: Db, orgId: string, limit: { perSecond: number; burst: number }) {
  await db`
    update organizations
       set rate_limit_per_second = ${limit.perSecond}, rate_limit_burst = ${limit.burst}, updated_at = now()
     where id = ${orgId}`;
}

/** Organizations whose sending is paused (GET /metrics). */
export async function countPausedOrgs(db: Db): Promise<number> {
  const [row] = await db<{ n: string }[]>`select count(*) as n from organizations where sending_paused`;
  return Number(row!.n);
}

/** The getting-started steps of an organization (the console's overview shows the ones left). */
export interface FirstSteps {
  domainVerified: boolean;
  keyMinted: boolean;
  emailSent: boolean;
  webhookAdded: boolean;
}

/** Each an index look-up that stops at the first row. */
export async function firstSteps(db: Db, orgId: string): Promise<FirstSteps> {
  const [row] = await db<{ d: boolean; k: boolean; e: boolean; w: boolean }[]>`
    select
      exists (select 1 from domains where org_id = ${orgId} and status = 'verified' and not demo) as d,
      exists (select 1 from api_keys where org_id = ${orgId} and permission <> 'ADMIN' and revoked_at is null) as k,
      exists (select 1 from emails where org_id = ${orgId}) as e,
      exists (select 1 from webhooks where org_id = ${orgId}) as w`;
  return { domainVerified: row!.d, keyMinted: row!.k, emailSent: row!.e, webhookAdded: row!.w };
}
