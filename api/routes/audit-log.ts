// GET /audit-log (DESIGN §15; ADMIN, live): the organization's audit rows, newest first, with
// cursor paging and filters by actor and action. Rows are written by api/middleware/audit.ts and
// api/console/audit.ts.
import { listAuditEntries, type AuditRow } from '../../shared/db/audit.js';
import type { ListAuditLogQuery } from '../schemas/organization.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { routeQuery } from '../route-schemas.js';

export function renderAuditEntry(a: AuditRow) {
  return {
    id: a.id,
    actor: { type: a.actor_type, id: a.actor_id },
    action: a.action,
    target: { type: a.target_type, id: a.target_id },
    ip: a.ip,
    created_at: a.created_at.toISOString(),
    detail: a.detail,
  };
}

export const auditLogHandlers: Handlers = {
  'GET /audit-log': async (ctx) => {
    const q = routeQuery<ListAuditLogQuery>(ctx);
    const rows = await listAuditEntries(ctx.deps.sql, ctx.state.auth.org.id, q, q);
    ctx.body = listEnvelope(rows, q.limit, renderAuditEntry);
  },
};
