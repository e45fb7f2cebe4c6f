// Broadcasts (DESIGN §5, Resend-compatible paths): create (a draft, or sent at once with
// `send: true`), list, get, update a draft, send now or at a time, cancel, delete a draft. The
// send itself is the `broadcast` queue's work (workers/broadcast.ts); the API only moves the
// state and adds the first batch job. A restricted key uses and sees only its domains.
import type { AuthContext } from '../../shared/auth.js';
import {
  cancelBroadcast,
  deleteDraft,
  getBroadcast,
  insertBroadcast,
  listBroadcasts,
  updateDraft,
  type BroadcastRow,
} from '../../shared/db/broadcasts.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { isId, newId } from '../../shared/ids.js';
import {
  type BroadcastListQuery,
  type CreateBroadcastBody,
  type PatchBroadcastBody,
  type SendBroadcastBody,
} from '../schemas/broadcasts.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { resolveBroadcast } from './broadcasts-input.js';
import { confirmed, createAndSend, sendDraft, sendTime } from './broadcasts-send.js';
import { scopeOf } from './emails.js';
import { routeBody, routeQuery } from '../route-schemas.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function renderBroadcast(b: BroadcastRow) {
  return {
    object: 'broadcast',
    id: b.id,
    name: b.name,
    from: b.from_address,
    subject: b.subject,
    reply_to: b.reply_to,
    preview_text: b.preview_text,
    html: b.html,
    text: b.text,
    template: b.template_id ? { id: b.template_id, version: b.template_version } : null,
    segment_id: b.segment_id,
    // Resend's older name for the segment.
    audience_id: b.segment_id,
    topic_id: b.topic_id,
    kind: b.kind,
    status: b.status,
    scheduled_at: iso(b.scheduled_at),
    sent_at: iso(b.sent_at),
    canceled_at: iso(b.canceled_at),
    counts: {
      recipients: b.count_recipients,
      sent: b.count_sent,
      skipped_unsubscribed: b.count_skipped_unsubscribed,
      skipped_suppressed: b.count_skipped_suppressed,
      skipped_topic: b.count_skipped_topic,
      failed: b.count_failed,
      canceled: b.count_canceled,
    },
    created_at: b.created_at.toISOString(),
  };
}

async function loadBroadcast(ctx: ApiContext & { state: { auth: AuthContext } }): Promise<BroadcastRow> {
  const id = ctx.params.id!;
  const row = isId(id, 'bc') ? await getBroadcast(ctx.deps.sql, scopeOf(ctx.state.auth), id) : null;
  if (!row) throw notFound('Broadcast');
  return row;
}

function checkPaused(auth: AuthContext): void {
  if (auth.org.sendingPaused) {
    const why = auth.org.sendingPausedReason ? `: ${auth.org.sendingPausedReason}` : '';
    throw new ApiError('sending_paused', `Sending is paused for this organization${why}`);
  }
}

export const broadcastHandlers: Handlers = {
  'POST /broadcasts': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateBroadcastBody>(ctx);
    if (body.send) checkPaused(auth);
    const now = Date.now();
    const content = await resolveBroadcast(ctx.deps.sql, auth, body, null, now);
    const id = newId('bc');
    const b = { ...content, id, org_id: auth.org.id, key_id: auth.key.id, mode: auth.key.mode };
    const row = body.send
      ? await createAndSend(ctx.deps, auth, b, sendTime(undefined, b, now))
      : await confirmed(ctx.deps, id, 'created', () => insertBroadcast(ctx.deps.sql, b));
    ctx.status = 201;
    ctx.body = renderBroadcast(row);
  },

  'GET /broadcasts': async (ctx) => {
    const q = routeQuery<BroadcastListQuery>(ctx);
    const rows = await listBroadcasts(ctx.deps.sql, scopeOf(ctx.state.auth), q.status, q);
    ctx.body = listEnvelope(rows, q.limit, renderBroadcast);
  },

  'GET /broadcasts/:id': async (ctx) => {
    ctx.body = renderBroadcast(await loadBroadcast(ctx));
  },

  'PATCH /broadcasts/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<PatchBroadcastBody>(ctx);
    const current = await loadBroadcast(ctx);
    if (body.id !== undefined && body.id !== current.id) throw validationError('body.id must match the path');
    if (current.status !== 'draft') {
      throw new ApiError('invalid_state', `Broadcast ${current.id} is ${current.status}; only a draft can be changed`);
    }
    const content = await resolveBroadcast(ctx.deps.sql, auth, body, current, Date.now());
    const row = await updateDraft(ctx.deps.sql, scopeOf(auth), current.id, content);
    if (!row) throw new ApiError('invalid_state', `Broadcast ${current.id} is no longer a draft`);
    ctx.body = renderBroadcast(row);
  },

  'DELETE /broadcasts/:id': async (ctx) => {
    const current = await loadBroadcast(ctx);
    const row = await deleteDraft(ctx.deps.sql, scopeOf(ctx.state.auth), current.id);
    if (!row) {
      throw new ApiError('invalid_state', `Broadcast ${current.id} is ${current.status}; only a draft can be deleted`);
    }
    ctx.body = { object: 'broadcast', id: row.id, deleted: true };
  },

  'POST /broadcasts/:id/send': async (ctx) => {
    const body = routeBody<SendBroadcastBody>(ctx);
    const current = await loadBroadcast(ctx);
    // The retry (same Idempotency-Key) of a send answered 504: sent by the first run if no longer a draft.
    const row =
      ctx.state.retryIds?.includes(current.id) && current.status !== 'draft'
        ? current
        : await sendDraft(ctx.deps, ctx.state.auth, current, sendTime(body.scheduled_at, current, Date.now()));
    ctx.body = { object: 'broadcast', id: row.id, status: row.status, scheduled_at: iso(row.scheduled_at) };
  },

  'POST /broadcasts/:id/cancel': async (ctx) => {
    const current = await loadBroadcast(ctx);
    const row = await ctx.deps.sql.begin((tx) => cancelBroadcast(tx, scopeOf(ctx.state.auth), current.id));
    if (!row) {
      throw new ApiError(
        'invalid_state',
        `Broadcast ${current.id} is ${current.status}; only a scheduled or sending broadcast can be canceled`,
      );
    }
    ctx.body = renderBroadcast(row);
  },
};
