// The audit row of an API change (DESIGN §15, shared/audit.ts): after a route of the audit table
// answers with success, one row names the key, the action, the target and the client address.
// A handler may refine the row through ctx.state.audit (a pause is `organization.paused`, not
// `organization.updated`). A failed write is logged (`AUDIT_WRITE_FAILED`): the change is made.
import { AUDIT_ACTIONS, auditDetail, writeAuditEntry } from '../../shared/audit.js';
import { routeId, type RouteRule } from '../../shared/permissions.js';
import type { Middleware } from '../router.js';

function idOf(body: unknown): string | null {
  if (!body || typeof body !== 'object' || Buffer.isBuffer(body)) return null;
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' ? id : null;
}

/** The middleware of a route the audit table lists, or null for any other route. */
export function auditTrail(rule: RouteRule): Middleware | null {
  const entry = AUDIT_ACTIONS[rule.aliasOf ?? routeId(rule)];
  if (!entry) return null;
  return async (ctx, next) => {
    await next();
    const auth = ctx.state.auth;
    if (!auth || (auth.key.permission !== 'ADMIN' && auth.key.permission !== 'FULL')) return;
    if (ctx.status >= 400) return;
    const over = ctx.state.audit ?? {};
    const targetId =
      over.targetId ??
      ctx.params[entry.param ?? 'id'] ??
      idOf(ctx.body) ??
      (entry.target === 'organization' ? auth.org.id : null);
    if (!targetId) return;
    const action = over.action ?? entry.action;
    const log = ctx.state.log;
    await writeAuditEntry(
      ctx.deps.sql,
      {
        orgId: auth.org.id,
        actor: { type: 'key', id: auth.key.id },
        action,
        target: { type: entry.target, id: targetId },
        ip: ctx.ip || null,
        detail: auditDetail(ctx.state.body, { mode: auth.key.mode, ...over.detail }),
      },
      (err) => log.error({ event: 'AUDIT_WRITE_FAILED', err, action }, 'audit row not written'),
    );
  };
}
