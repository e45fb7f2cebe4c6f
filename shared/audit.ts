// What the audit log records (DESIGN §15, docs/operations.md "Audit log"): the action each
// changing API route writes when an ADMIN or FULL key calls it, and the rule that keeps secrets
// out of a row's detail. Every non-GET route of tier FULL or ADMIN has an action here (a unit test
// checks), so a new management route cannot be forgotten; a few SEND-tier routes that undo or
// redo work (cancels, reschedules) are recorded too when a FULL or ADMIN key calls them.
import { insertAuditEntry, type NewAuditEntry } from './db/audit.js';
import type { Db } from './db/pool.js';
import { newId } from './ids.js';
import { isTransientError, retryTransient } from './transient.js';

export interface AuditAction {
  action: string;
  /** Target type; its id is the route's `:id` (or `:delivery_id`), else the answer's `id`. */
  target: string;
  /** The path parameter naming the target (default `id`). */
  param?: string;
}

export const AUDIT_ACTIONS: Record<string, AuditAction> = {
  'POST /keys': { action: 'key.minted', target: 'key' },
  'DELETE /keys/:id': { action: 'key.revoked', target: 'key' },
  'POST /keys/:id/rotate': { action: 'key.rotated', target: 'key' },
  // organization.paused / organization.resumed when the pause changes (set by the handler).
  'PATCH /organization': { action: 'organization.updated', target: 'organization' },
  'POST /domains': { action: 'domain.created', target: 'domain' },
  'PATCH /domains/:id': { action: 'domain.updated', target: 'domain' },
  'DELETE /domains/:id': { action: 'domain.deleted', target: 'domain' },
  'POST /domains/:id/verify': { action: 'domain.verify_requested', target: 'domain' },
  'PATCH /emails/:id': { action: 'email.rescheduled', target: 'email' },
  'POST /emails/:id/cancel': { action: 'email.canceled', target: 'email' },
  'DELETE /templates/:id': { action: 'template.deleted', target: 'template' },
  'DELETE /suppressions/:id': { action: 'suppression.removed', target: 'suppression' },
  'POST /webhooks': { action: 'webhook.created', target: 'webhook' },
  'PATCH /webhooks/:id': { action: 'webhook.updated', target: 'webhook' },
  'DELETE /webhooks/:id': { action: 'webhook.deleted', target: 'webhook' },
  'POST /webhooks/:id/rotate-secret': { action: 'webhook.secret_rotated', target: 'webhook' },
  'POST /webhooks/:id/deliveries/:delivery_id/retry': {
    action: 'webhook_delivery.replayed',
    target: 'webhook_delivery',
    param: 'delivery_id',
  },
  'POST /webhooks/:id/test': { action: 'webhook.test_sent', target: 'webhook' },
  'POST /contacts/imports': { action: 'contact_import.created', target: 'contact_import' },
  'POST /contacts/exports': { action: 'contact_export.created', target: 'contact_export' },
  'DELETE /contacts/:id': { action: 'contact.deleted', target: 'contact' },
  'DELETE /audiences/:audience_id/contacts/:id': { action: 'contact.deleted', target: 'contact' },
  'POST /topics': { action: 'topic.created', target: 'topic' },
  'PATCH /topics/:id': { action: 'topic.updated', target: 'topic' },
  'DELETE /topics/:id': { action: 'topic.deleted', target: 'topic' },
  'POST /segments': { action: 'segment.created', target: 'segment' },
  'PATCH /segments/:id': { action: 'segment.updated', target: 'segment' },
  'DELETE /segments/:id': { action: 'segment.deleted', target: 'segment' },
  // A contact taken out of a static segment: the segment changed.
  'DELETE /contacts/:id/segments/:segment_id': {
    action: 'segment.contact_removed',
    target: 'segment',
    param: 'segment_id',
  },
  'DELETE /broadcasts/:id': { action: 'broadcast.deleted', target: 'broadcast' },
  'POST /broadcasts/:id/cancel': { action: 'broadcast.canceled', target: 'broadcast' },
  'POST /automations': { action: 'automation.created', target: 'automation' },
  'PATCH /automations/:id': { action: 'automation.updated', target: 'automation' },
  'DELETE /automations/:id': { action: 'automation.deleted', target: 'automation' },
};

/** Field names whose value never enters a row's detail, whatever the route. */
const SECRET_FIELD = /token|secret|password|key$|authorization|signature|dkim_private/i;

/**
 * The detail of a row: the names of the request's fields (never their values, which may hold
 * personal data or secrets) plus what the handler adds; a field named like a secret is dropped,
 * and only scalars and arrays of scalars are kept.
 */
export function auditDetail(body: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const detail: Record<string, unknown> = {};
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const fields = Object.keys(body).filter((k) => !SECRET_FIELD.test(k));
    if (fields.length > 0) detail.fields = fields.sort();
  }
  for (const [k, v] of Object.entries(extra)) {
    if (SECRET_FIELD.test(k) || v === undefined) continue;
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) detail[k] = v;
    else if (Array.isArray(v) && v.every((x) => ['string', 'number', 'boolean'].includes(typeof x))) detail[k] = v;
  }
  return detail;
}

/** How long a change's audit row is tried again while Postgres is unreachable. */
const AUDIT_RETRY_MS = 60_000;

/**
 * Writes the audit row of a change that was made. While Postgres is unreachable the write is
 * tried again in the background (the same row id, so it is stored once) for up to a minute, and
 * the caller is not held; `onFailed` is told when the row could not be written.
 */
export async function writeAuditEntry(db: Db, entry: NewAuditEntry, onFailed: (err: unknown) => void): Promise<void> {
  const id = newId('aud');
  try {
    await insertAuditEntry(db, entry, id);
  } catch (err) {
    if (!isTransientError(err)) {
      onFailed(err);
      return;
    }
    void retryTransient(() => insertAuditEntry(db, entry, id), { maxMs: AUDIT_RETRY_MS, firstDelayMs: 500 }).catch(
      onFailed,
    );
  }
}
