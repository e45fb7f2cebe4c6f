// Webhook endpoints (DESIGN §5 Webhooks, §7): management (ADMIN, live), the deliveries log,
// manual retry and test sends. The signing secret is shown only on create and rotate.
import { listDeliveries, type ListedDelivery } from '../../shared/db/webhook-deliveries.js';
import {
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookRow,
} from '../../shared/db/webhooks.js';
import { notFound, validationError } from '../../shared/errors.js';
import { EVENT_TYPES } from '../../shared/events.js';
import { secretBox } from '../../shared/secrets.js';
import { createEndpoint, retryDelivery, sendTestEvent } from '../../shared/webhooks/manage.js';
import { checkWebhookUrl, newSigningSecret } from '../../shared/webhooks/rules.js';
import {
  type CreateWebhookBody,
  type ListDeliveriesQuery,
  type RotateSecretBody,
  type TestWebhookBody,
  type UpdateWebhookBody,
} from '../schemas/webhooks.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope, type Pagination } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function render(w: WebhookRow) {
  return {
    object: 'webhook',
    id: w.id,
    url: w.url,
    endpoint: w.url,
    events: w.events,
    description: w.description,
    status: w.status,
    disabled_reason: w.disabled_reason,
    previous_secret_expires_at:
      w.previous_secret_expires_at && w.previous_secret_expires_at > new Date()
        ? iso(w.previous_secret_expires_at)
        : null,
    created_at: iso(w.created_at),
    updated_at: iso(w.updated_at),
  };
}

function renderDelivery(d: ListedDelivery) {
  return {
    object: 'webhook_delivery',
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: iso(d.next_attempt_at),
    created_at: iso(d.created_at),
    completed_at: iso(d.completed_at),
    history: d.history.map((a) => ({
      attempt: a.attempt,
      started_at: iso(a.started_at),
      finished_at: iso(a.finished_at),
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      error: a.finished_at === null ? 'interrupted (no result recorded)' : a.error,
    })),
  };
}

/** `url`, or Resend's name for it, `endpoint`: one of them. */
function urlOf(body: { url?: string; endpoint?: string }): string | undefined {
  if (body.url !== undefined && body.endpoint !== undefined) {
    throw validationError('body.endpoint is Resend’s name for body.url: give one of them');
  }
  return body.url ?? body.endpoint;
}

function failRequired(): never {
  throw validationError('body.url is required (or Resend’s name for it, body.endpoint)');
}

async function loadOwn(ctx: ApiContext & { state: { auth: { org: { id: string } } } }): Promise<WebhookRow> {
  const w = await getWebhook(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
  if (!w) throw notFound('Webhook');
  return w;
}

export const webhookHandlers: Handlers = {
  'POST /webhooks': async (ctx) => {
    const body = routeBody<CreateWebhookBody>(ctx);
    const w = await createEndpoint(ctx.deps.sql, secretBox(ctx.deps.config), ctx.deps.config.webhookAllowPrivate, {
      orgId: ctx.state.auth.org.id,
      url: urlOf(body) ?? failRequired(),
      events: body.events ?? [...EVENT_TYPES],
      description: body.description ?? null,
    });
    ctx.status = 201;
    ctx.body = { ...render(w), signing_secret: w.signing_secret };
  },

  'GET /webhooks': async (ctx) => {
    const q = routeQuery<Pagination>(ctx);
    const rows = await listWebhooks(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /webhooks/:id': async (ctx) => {
    ctx.body = render(await loadOwn(ctx));
  },

  'PATCH /webhooks/:id': async (ctx) => {
    const body = routeBody<UpdateWebhookBody>(ctx);
    const given = urlOf(body);
    const url = given === undefined ? undefined : checkWebhookUrl(given, ctx.deps.config.webhookAllowPrivate);
    const w = await updateWebhook(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!, {
      ...(url !== undefined ? { url } : {}),
      ...(body.events !== undefined ? { events: body.events } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.status !== undefined ? { status: body.status } : {}),
    });
    if (!w) throw notFound('Webhook');
    ctx.body = render(w);
  },

  'DELETE /webhooks/:id': async (ctx) => {
    const w = await deleteWebhook(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!w) throw notFound('Webhook');
    ctx.body = { object: 'webhook', id: w.id, deleted: true };
  },

  'POST /webhooks/:id/rotate-secret': async (ctx) => {
    const body = routeBody<RotateSecretBody>(ctx);
    const w = await rotateWebhookSecret(
      ctx.deps.sql,
      secretBox(ctx.deps.config),
      ctx.state.auth.org.id,
      ctx.params.id!,
      newSigningSecret(),
      body.expires_in,
    );
    if (!w) throw notFound('Webhook');
    ctx.body = { ...render(w), signing_secret: w.signing_secret };
  },

  'GET /webhooks/:id/deliveries': async (ctx) => {
    const q = routeQuery<ListDeliveriesQuery>(ctx);
    const w = await loadOwn(ctx);
    const rows = await listDeliveries(ctx.deps.sql, w.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderDelivery);
  },

  'POST /webhooks/:id/deliveries/:delivery_id/retry': async (ctx) => {
    const d = await retryDelivery(ctx.deps, await loadOwn(ctx), ctx.params.delivery_id!);
    ctx.status = 202;
    ctx.body = { object: 'webhook_delivery', id: d.id, status: d.status, next_attempt_at: iso(d.next_attempt_at) };
  },

  'POST /webhooks/:id/test': async (ctx) => {
    const body = routeBody<TestWebhookBody>(ctx);
    const { delivery: d, eventId } = await sendTestEvent(ctx.deps, await loadOwn(ctx), body.type);
    ctx.status = 202;
    ctx.body = { object: 'webhook_delivery', id: d.id, event_id: eventId, event_type: body.type, status: d.status };
  },
};
