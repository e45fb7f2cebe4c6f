// The audit row of a console action (cancel, retry, suppression changes, keys, domains, users):
// who did what to which record, from where. One function, so that the whole console records its
// actions the same way: a row of the audit log (GET /audit-log, the Audit page) and a
// `CONSOLE_ACTION` log line. The detail never holds a secret (shared/audit.ts `auditDetail`).
import { auditDetail, writeAuditEntry } from '../../shared/audit.js';
import type { SessionRow } from '../../shared/db/users.js';
import type { ApiContext } from '../types.js';

export interface AuditTarget {
  type: string;
  id: string;
}

/** Writes the audit row of `action` (e.g. `email.canceled`) by the signed-in user, and logs it. */
export async function audit(
  ctx: ApiContext,
  session: SessionRow,
  action: string,
  target: AuditTarget,
  detail: Record<string, unknown> = {},
): Promise<void> {
  const clean = auditDetail(undefined, detail);
  ctx.state.log.info(
    {
      event: 'CONSOLE_ACTION',
      actor: { type: 'user', id: session.user_id, email: session.email },
      orgId: session.org_id,
      action,
      target,
      ip: ctx.ip,
      ...(Object.keys(clean).length ? { detail: clean } : {}),
    },
    `console action ${action}`,
  );
  const log = ctx.state.log;
  await writeAuditEntry(
    ctx.deps.sql,
    {
      orgId: session.org_id,
      actor: { type: 'user', id: session.user_id },
      action,
      target,
      ip: ctx.ip || null,
      detail: { ...clean, via: 'console' },
    },
    (err) => log.error({ event: 'AUDIT_WRITE_FAILED', err, action }, 'audit row not written'),
  );
}
