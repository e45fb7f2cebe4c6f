// What an admin may do to a message from its page, each behind a confirmation (a GET that shows
// what will happen, a POST with the CSRF token that does it) and recorded by `audit`:
// - cancel: a scheduled message, or one not yet handed to delivery (as POST /emails/{id}/cancel);
// - retry now: a deferred recipient becomes due now and its delayed delivery job runs now;
// - remove suppression: the rows that block a recipient's address for this message's domain.
import { retryRecipientNow, listRecipientDetails, type RecipientDetail } from '../../shared/db/email-detail.js';
import { cancelEmail, type EmailRow } from '../../shared/db/emails.js';
import { deleteSuppressions, suppressionsOf, type SuppressionRow } from '../../shared/db/suppressions.js';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, notFound } from '../../shared/errors.js';
import { deliveryQueue } from '../../shared/queues.js';
import { dropJob } from '../mail/drop-job.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { cancelable, loadOrgEmail } from './email-load.js';
import { html } from './html.js';
import { confirmPage, redirect, type ConsoleRequest, type PageRule } from './respond.js';

const detailPath = (e: EmailRow) => `/console/emails/${e.id}`;

async function recipientOf(ctx: ApiContext, email: EmailRow): Promise<RecipientDetail> {
  const r = (await listRecipientDetails(ctx.deps.sql, email.id)).find((x) => x.id === ctx.params.rid);
  if (!r) throw notFound('Recipient');
  return r;
}

function notCancelable(e: EmailRow): ApiError {
  return new ApiError('invalid_state', `This email is ${e.status}; only a scheduled or queued email can be canceled`);
}

async function cancelConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  if (!cancelable(email)) throw notCancelable(email);
  confirmPage(ctx, session, {
    title: 'Cancel this email?',
    active: '/console/emails',
    question: html`<strong>${email.subject || '(no subject)'}</strong> to ${email.to_addresses.join(', ')} is
      ${email.status}${email.scheduled_at ? html` for ${email.scheduled_at.toISOString()}` : ''}. Canceling it means it
      is never sent; this cannot be undone.`,
    action: `${detailPath(email)}/cancel`,
    confirmLabel: 'Cancel email',
    back: detailPath(email),
    danger: true,
  });
}

/** Cancels one message as POST /emails/{id}/cancel does, and records it; false when it was no longer cancelable. */
export async function cancelOne(ctx: ApiContext, session: SessionRow, email: EmailRow, detail = {}): Promise<boolean> {
  const scope = { orgId: session.org_id, mode: email.mode, domainIds: [] };
  const row = await ctx.deps.sql.begin((tx) => cancelEmail(tx, scope, email.id));
  if (!row) return false;
  await dropJob(ctx, email);
  await audit(ctx, session, 'email.canceled', { type: 'email', id: email.id }, detail);
  return true;
}

async function cancelAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  if (!(await cancelOne(ctx, session, email))) throw notCancelable(email);
  redirect(ctx, detailPath(email));
}

function notDeferred(r: RecipientDetail): ApiError {
  return new ApiError(
    'invalid_state',
    `${r.email} is ${r.status.replace(/_/g, ' ')}${r.attempt_started_at ? ' (an attempt is in flight)' : ''}; only a deferred recipient can be retried`,
  );
}

async function retryConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const r = await recipientOf(ctx, email);
  if (r.status !== 'delivery_delayed' || r.attempt_started_at) throw notDeferred(r);
  confirmPage(ctx, session, {
    title: 'Retry this recipient now?',
    active: '/console/emails',
    question: html`Delivery to <strong>${r.email}</strong> was deferred after ${r.attempts}
      attempt${r.attempts === 1 ? '' : 's'}${r.last_response ? html` (last reply <code>${r.last_response}</code>)` : ''}
      and would be tried again at ${r.next_attempt_at?.toISOString() ?? 'its next attempt'}. Retry now attempts it at
      once; if it is deferred again, the retry schedule goes on from there.`,
    action: `${detailPath(email)}/recipients/${r.id}/retry`,
    confirmLabel: 'Retry now',
    back: detailPath(email),
  });
}

/**
 * Makes the recipient due now, then moves the delayed job that would have run it to now (when
 * it waits for this recipient alone), or adds a job that runs now.
 */
async function retryAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const r = await recipientOf(ctx, email);
  if (!(await retryOne(ctx, session, email, r))) throw notDeferred(r);
  redirect(ctx, detailPath(email));
}

/** Retries one deferred recipient now and records it; false when it was no longer deferred. */
export async function retryOne(
  ctx: ApiContext,
  session: SessionRow,
  email: EmailRow,
  r: RecipientDetail,
  detail = {},
): Promise<boolean> {
  const done = await retryRecipientNow(ctx.deps.sql, email.id, r.id);
  if (!done) return false;
  const queue = deliveryQueue(ctx.deps.queues, email.stream);
  let moved = false;
  try {
    if (done.previousDue && !done.sharedDue) {
      const job = await queue.getJob(`${email.id}-${done.previousDue.getTime()}`);
      if (job && (await job.isDelayed())) {
        await job.promote();
        moved = true;
      }
    }
    if (!moved) {
      const jobId = `${email.id}-${done.due.getTime()}`;
      await queue.enqueue([{ emailId: email.id, orgId: email.org_id, stream: email.stream, jobId }]);
    }
  } catch (err) {
    // The recipient is due in the database: the delivery sweeper enqueues it within its grace period.
    ctx.state.log.warn(
      { event: 'CONSOLE_RETRY_JOB_FAILED', err, emailId: email.id },
      'retry job not moved; sweeper will',
    );
  }
  await audit(
    ctx,
    session,
    'recipient.retry_requested',
    { type: 'recipient', id: r.id },
    { emailId: email.id, moved, ...detail },
  );
  return true;
}

async function blocking(ctx: ApiContext, session: SessionRow, email: EmailRow, r: RecipientDetail) {
  const rows = await suppressionsOf(ctx.deps.sql, session.org_id, email.domain_id, [r.email]);
  if (rows.length === 0) throw notFound('Suppression');
  return rows;
}

function scopeOf(s: SuppressionRow): string {
  return s.domain_id ? 'for this domain' : 'for the whole organization';
}

async function unsuppressConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const r = await recipientOf(ctx, email);
  const rows = await blocking(ctx, session, email, r);
  confirmPage(ctx, session, {
    title: 'Remove this suppression?',
    active: '/console/emails',
    question: html`<strong>${r.email}</strong> is suppressed
      ${rows.map((s, i) => html`${i ? ' and ' : ''}${scopeOf(s)} (${s.reason.replace(/_/g, ' ')})`)}. Removing it lets
      live mail reach this address again; this message is not sent again by it.`,
    action: `${detailPath(email)}/recipients/${r.id}/unsuppress`,
    confirmLabel: 'Remove suppression',
    back: detailPath(email),
    danger: true,
  });
}

async function unsuppressAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const r = await recipientOf(ctx, email);
  const rows = await blocking(ctx, session, email, r);
  await unsuppress(ctx, session, rows);
  redirect(ctx, detailPath(email));
}

/** Deletes these suppression rows and records each; returns how many were deleted. */
export async function unsuppress(
  ctx: ApiContext,
  session: SessionRow,
  rows: SuppressionRow[],
  detail = {},
): Promise<number> {
  const deleted = await deleteSuppressions(
    ctx.deps.sql,
    session.org_id,
    rows.map((s) => s.id),
  );
  for (const s of deleted) {
    await audit(ctx, session, 'suppression.removed', { type: 'suppression', id: s.id }, { email: s.email, ...detail });
  }
  return deleted.length;
}

export const EMAIL_ACTION_PAGES: PageRule[] = [
  { method: 'GET', path: '/emails/:id/cancel', role: 'admin', page: cancelConfirm },
  { method: 'POST', path: '/emails/:id/cancel', role: 'admin', page: cancelAction },
  { method: 'GET', path: '/emails/:id/recipients/:rid/retry', role: 'admin', page: retryConfirm },
  { method: 'POST', path: '/emails/:id/recipients/:rid/retry', role: 'admin', page: retryAction },
  { method: 'GET', path: '/emails/:id/recipients/:rid/unsuppress', role: 'admin', page: unsuppressConfirm },
  { method: 'POST', path: '/emails/:id/recipients/:rid/unsuppress', role: 'admin', page: unsuppressAction },
];
