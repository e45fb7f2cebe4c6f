// The audit log (DESIGN §15): one row per change made with an ADMIN or FULL key or in the
// console. Written by api/middleware/audit.ts (API) and api/console/audit.ts (console).
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

export interface NewAuditEntry {
  orgId: string;
  actor: { type: 'key' | 'user'; id: string };
  action: string;
  target: { type: string; id: string };
  ip: string | null;
  detail: Record<string, unknown>;
}

export interface AuditRow {
  id: string;
  org_id: string;
  actor_type: 'key' | 'user';
  actor_id: string;
  action: string;
  target_type: string;
  target_id: string;
  ip: string | null;
  detail: Record<string, unknown>;
  created_at: Date;
}

/**
 * Inserts one row. With `id`, running it again after an attempt whose outcome was lost stores
 * the row once (the second run finds it and returns null).
 */
export async function insertAuditEntry(db: Db, e: NewAuditEntry, id = newId('aud')): Promise<AuditRow | null> {
  const [row] = await db<AuditRow[]>`
    insert into audit_log (id, org_id, actor_type, actor_id, action, target_type, target_id, ip, detail)
    values (${id}, ${e.orgId}, ${e.actor.type}, ${e.actor.id}, ${e.action}, ${e.target.type},
      ${e.target.id}, ${e.ip}, ${jsonParam(db, e.detail)})
    on conflict (id) do nothing
    returning *`;
  return row ?? null;
}

export interface AuditFilters {
  actor?: string | undefined;
  action?: string | undefined;
}

export interface AuditPage {
  limit: number;
  after?: string | undefined;
  before?: string | undefined;
}

/** Newest first, `limit + 1` rows; `after`/`before` are ids (ids sort by creation time). */
export async function listAuditEntries(db: Db, orgId: string, f: AuditFilters, page: AuditPage): Promise<AuditRow[]> {
  const filters = db`
    ${f.actor ? db`and actor_id = ${f.actor}` : db``}
    ${f.action ? db`and action = ${f.action}` : db``}`;
  if (page.before) {
    const rows = await db<AuditRow[]>`
      select * from audit_log where org_id = ${orgId} and id > ${page.before} ${filters}
      order by id asc limit ${page.limit + 1}`;
    return rows.reverse();
  }
  return await db<AuditRow[]>`
    select * from audit_log
    where org_id = ${orgId} ${page.after ? db`and id < ${page.after}` : db``} ${filters}
    order by id desc limit ${page.limit + 1}`;
}

/** The people's emails and the keys' names of the actors of `rows` (an actor since deleted has none). */
export async function auditActorNames(db: Db, orgId: string, rows: AuditRow[]): Promise<Map<string, string>> {
  const users = [...new Set(rows.filter((r) => r.actor_type === 'user').map((r) => r.actor_id))];
  const keys = [...new Set(rows.filter((r) => r.actor_type === 'key').map((r) => r.actor_id))];
  if (users.length === 0 && keys.length === 0) return new Map();
  const named = await db<{ id: string; name: string }[]>`
    select id, email as name from users where org_id = ${orgId} and id = any(${users})
    union all
    select id, name from api_keys where org_id = ${orgId} and id = any(${keys})`;
  return new Map(named.map((n) => [n.id, n.name]));
}
