// Emails (DESIGN §5, Resend-compatible paths): send, batch, list, get, events, reschedule, cancel.
import type { AuthContext } from '../../shared/auth.js';
import {
  cancelEmail,
  getEmail,
  listEmailEvents,
  listEmails,
  listRecipients,
  rescheduleEmail,
  type EmailRow,
  type EmailScope,
  type RecipientRow,
} from '../../shared/db/emails.js';
import type { EventRow } from '../../shared/events.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import { readRawMessage } from '../../shared/mail/raw-message.js';
import { deliveryQueue } from '../../shared/queues.js';
import {
  type ListEmailsQuery,
  type RawEmailQuery,
  type SendEmailBody,
  type UpdateEmailBody,
} from '../schemas/emails.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { batchHandler } from './emails-batch.js';
import { parseSchedule, precheck, prepareEmail } from '../mail/emails-input.js';
import { dropJob } from '../mail/drop-job.js';
import { storeAndEnqueue } from '../mail/emails-send.js';
import { resolveForSend } from './emails-template.js';
import { checkTopic, sendTopics } from './emails-topics.js';
import { routeBody, routeQuery } from '../route-schemas.js';

export function scopeOf(auth: AuthContext): EmailScope {
  return { orgId: auth.org.id, mode: auth.key.mode, domainIds: auth.key.domainIds };
}

/** Resend reports `last_event` without a namespace ("delivered"); before any event, the status. */
function lastEvent(e: EmailRow): string {
  return e.last_event ? e.last_event.replace(/^email\./, '') : e.status;
}

/** An email as GET /emails lists it. */
function renderListItem(e: EmailRow) {
  return {
    object: 'email',
    id: e.id,
    from: e.from_address,
    to: e.to_addresses,
    cc: e.cc_addresses,
    bcc: e.bcc_addresses,
    reply_to: e.reply_to,
    subject: e.subject,
    tags: e.tags,
    kind: e.kind,
    stream: e.stream,
    mode: e.mode,
    status: e.status,
    created_at: e.created_at.toISOString(),
    scheduled_at: e.scheduled_at?.toISOString() ?? null,
    last_event: lastEvent(e),
  };
}

/**
 * An email as GET /emails/{id} shows it: the list item, its content, where to read its MIME
 * (GET /emails/{id}/raw, same key) and each recipient's state.
 */
function renderEmail(e: EmailRow, recipients: RecipientRow[], baseUrl: string) {
  return {
    ...renderListItem(e),
    raw_url: `${baseUrl}/api/v1/emails/${e.id}/raw`,
    html: e.html,
    text: e.text,
    template: e.template_id ? { id: e.template_id, slug: e.template_slug, version: e.template_version } : null,
    // The organization's retention removed the bodies, raw MIME and attachments; the rest stays.
    ...(e.content_purged_at ? { content: 'purged' as const } : {}),
    recipients: recipients.map((r) => ({
      email: r.email,
      field: r.field,
      status: r.status,
      last_event_at: r.last_event_at?.toISOString() ?? null,
      wait_reason: r.wait_reason,
      last_response: r.last_response,
      tls: r.tls,
    })),
  };
}

function renderEvent(ev: EventRow) {
  return {
    object: 'event',
    id: ev.id,
    type: ev.type,
    recipient: ev.recipient,
    ...(ev.bounce_type ? { bounce_type: ev.bounce_type } : {}),
    ...(ev.detail ? { detail: ev.detail } : {}),
    ...(ev.url ? { url: ev.url } : {}),
    created_at: ev.created_at.toISOString(),
  };
}

async function loadEmail(ctx: ApiContext & { state: { auth: AuthContext } }): Promise<EmailRow> {
  const id = ctx.params.id!;
  const row = isId(id, 'em') ? await getEmail(ctx.deps.sql, scopeOf(ctx.state.auth), id) : null;
  if (!row) throw notFound('Email');
  return row;
}

export const emailHandlers: Handlers = {
  'POST /emails': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<SendEmailBody>(ctx);
    precheck('body', body);
    checkTopic('body', body.topic_id, await sendTopics(ctx.deps.sql, auth, [body]));
    const template = await resolveForSend(ctx.deps.sql, auth, body);
    const id = ctx.state.retryIds?.[0];
    const prepared = prepareEmail('body', body, { auth, now: Date.now(), template, id });
    await storeAndEnqueue({ ...ctx.deps, logger: ctx.state.log }, 'api', [prepared]);
    ctx.body = { id: prepared.email.id };
  },

  'POST /emails/batch': batchHandler,

  'GET /emails': async (ctx) => {
    const q = routeQuery<ListEmailsQuery>(ctx);
    const [tagName, tagValue] = q.tag ? q.tag.split(':', 2) : [];
    const rows = await listEmails(
      ctx.deps.sql,
      scopeOf(ctx.state.auth),
      {
        status: q.status,
        kind: q.kind,
        stream: q.stream,
        tag: tagName ? { name: tagName, value: tagValue } : undefined,
        to: q.to?.toLowerCase(),
        createdAfter: q.created_after ? new Date(q.created_after) : undefined,
        createdBefore: q.created_before ? new Date(q.created_before) : undefined,
      },
      q,
    );
    ctx.body = listEnvelope(rows, q.limit, renderListItem);
  },

  'GET /emails/:id': async (ctx) => {
    const email = await loadEmail(ctx);
    ctx.body = renderEmail(email, await listRecipients(ctx.deps.sql, email.id), ctx.deps.config.baseUrl);
  },

  'GET /emails/:id/raw': async (ctx) => {
    const q = routeQuery<RawEmailQuery>(ctx);
    const email = await loadEmail(ctx);
    if (email.content_purged_at) throw new ApiError('not_found', 'The content of this email was purged (retention)');
    const found = await readRawMessage(ctx.deps, email.id, q.recipient ?? null);
    if (!found.ok && found.reason === 'unknown_recipient') {
      throw validationError(`recipient: ${q.recipient} is not a recipient of email ${email.id}`);
    }
    if (!found.ok) throw notFound('Email');
    const { message } = found;
    const brand = ctx.deps.config.brand;
    ctx.set(`${brand}-raw-source`, message.source);
    ctx.set(`${brand}-envelope-to`, message.envelopeTo.join(', '));
    if (message.envelopeFrom) ctx.set(`${brand}-envelope-from`, message.envelopeFrom);
    ctx.set('content-disposition', `inline; filename="${email.id}.eml"`);
    ctx.type = 'message/rfc822';
    ctx.body = message.raw;
  },

  'GET /emails/:id/events': async (ctx) => {
    const q = routeQuery<{ limit: number; after?: string }>(ctx);
    const email = await loadEmail(ctx);
    const rows = await listEmailEvents(ctx.deps.sql, email.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderEvent);
  },

  'PATCH /emails/:id': async (ctx) => {
    const body = routeBody<UpdateEmailBody>(ctx);
    const email = await loadEmail(ctx);
    const now = Date.now();
    const at = parseSchedule('body.scheduled_at', body.scheduled_at, now);
    const row = await ctx.deps.sql.begin((tx) => rescheduleEmail(tx, scopeOf(ctx.state.auth), email.id, at));
    if (!row)
      throw new ApiError(
        'invalid_state',
        `Email ${email.id} is ${email.status}; only a scheduled email can be rescheduled`,
      );
    await moveJob(ctx, email, at.getTime() - now);
    ctx.body = { object: 'email', id: email.id };
  },

  'POST /emails/:id/cancel': async (ctx) => {
    const email = await loadEmail(ctx);
    const row = await ctx.deps.sql.begin((tx) => cancelEmail(tx, scopeOf(ctx.state.auth), email.id));
    if (!row) {
      throw new ApiError('invalid_state', `Email ${email.id} is ${email.status}; it can no longer be canceled`);
    }
    await dropJob(ctx, email);
    ctx.body = { object: 'email', id: email.id };
  },
};

/**
 * Moves the delayed job. If the job is gone (Redis lost it) a new one is added; if it already
 * became active the worker sees `scheduled_at` in the future and re-delays it.
 */
async function moveJob(ctx: ApiContext, email: EmailRow, delay: number): Promise<void> {
  const queue = deliveryQueue(ctx.deps.queues, email.stream);
  const emailId = email.id;
  try {
    const job = await queue.getJob(emailId);
    if (job && (await job.isDelayed())) {
      await job.changeDelay(delay);
      return;
    }
    // A job that cannot be removed (a worker is running it) would make the add below a no-op: the
    // failure is logged below, and the sweeper delivers at the stored time.
    if (job) await job.remove();
    await queue.enqueue([{ emailId, orgId: email.org_id, stream: email.stream, jobId: emailId, delay }]);
  } catch (err) {
    ctx.state.log.warn({ event: 'EMAIL_RESCHEDULE_JOB_FAILED', err, emailId }, 'delivery job not moved; sweeper will');
  }
}
