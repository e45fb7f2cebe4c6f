// Webhook endpoints (DESIGN §5 Webhooks, §7): management (ADMIN, live), the deliveries log,
// manual retry and test sends. The signing secret is shown only on create and rotate.
import {
  insertTestDelivery,
  listDeliveries,
  requeueDelivery,
  type ListedDelivery,
} from '../../shared/db/webhook-deliveries.js';
import {
  deleteWebhook,
  getWebhook,
  insertWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookRow,
} from '../../shared/db/webhooks.js';
import { ApiError, notFound } from '../../shared/errors.js';
import { EVENT_TYPES } from '../../shared/events.js';
import { newId } from '../../shared/ids.js';
import { sampleEnvelope, serialise } from '../../shared/webhook-payload.js';
import { checkWebhookUrl, enqueueDeliveries, enqueueNow, newSigningSecret } from '../../shared/webhooks.js';
import {
  createWebhookSchema,
  listDeliveriesQuerySchema,
  listWebhooksQuerySchema,
  rotateSecretSchema,
  testWebhookSchema,
  updateWebhookSchema,
  type CreateWebhookBody,
  type ListDeliveriesQuery,
  type RotateSecretBody,
  type TestWebhookBody,
  type UpdateWebhookBody,
} from '../schemas/webhooks.js';
import type { ApiContext, Handlers } from '../types.js';
import { bodyValidator, listEnvelope, queryValidator, type Pagination } from '../validate.js';

const validateCreate = bodyValidator<CreateWebhookBody>(createWebhookSchema);
const validateUpdate = bodyValidator<UpdateWebhookBody>(updateWebhookSchema);
const validateRotate = bodyValidator<RotateSecretBody>(rotateSecretSchema);
const validateTest = bodyValidator<TestWebhookBody>(testWebhookSchema);
const validateList = queryValidator<Pagination>(listWebhooksQuerySchema);
const validateDeliveries = queryValidator<ListDeliveriesQuery>(listDeliveriesQuerySchema);

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function render(w: WebhookRow) {
  return {
    object: 'webhook',
    id: w.id,
    url: w.url,
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

async function loadOwn(ctx: ApiContext & { state: { auth: { org: { id: string } } } }): Promise<WebhookRow> {
  const w = await getWebhook(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
  if (!w) throw notFound('Webhook');
  return w;
}

export const webhookHandlers: Handlers = {
  'POST /webhooks': async (ctx) => {
    const body = validateCreate(ctx.state.body);
    const url = checkWebhookUrl(body.url, ctx.deps.config.webhookAllowPrivate);
    const w = await insertWebhook(ctx.deps.sql, {
      orgId: ctx.state.auth.org.id,
      url,
      events: body.events ?? [...EVENT_TYPES],
      description: body.description ?? null,
      secret: newSigningSecret(),
    });
    ctx.status = 201;
    ctx.body = { ...render(w), signing_secret: w.signing_secret };
  },

  'GET /webhooks': async (ctx) => {
    const q = validateList(ctx.query);
    const rows = await listWebhooks(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /webhooks/:id': async (ctx) => {
    ctx.body = render(await loadOwn(ctx));
  },

  'PATCH /webhooks/:id': async (ctx) => {
    const body = validateUpdate(ctx.state.body);
    const url = body.url === undefined ? undefined : checkWebhookUrl(body.url, ctx.deps.config.webhookAllowPrivate);
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
    const body = validateRotate(ctx.state.body);
    const w = await rotateWebhookSecret(
      ctx.deps.sql,
      ctx.state.auth.org.id,
      ctx.params.id!,
      newSigningSecret(),
      body.expires_in,
    );
    if (!w) throw notFound('Webhook');
    ctx.body = { ...render(w), signing_secret: w.signing_secret };
  },

  'GET /webhooks/:id/deliveries': async (ctx) => {
    const q = validateDeliveries(ctx.query);
    const w = await loadOwn(ctx);
    const rows = await listDeliveries(ctx.deps.sql, w.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderDelivery);
  },

  'POST /webhooks/:id/deliveries/:delivery_id/retry': async (ctx) => {
    const w = await loadOwn(ctx);
    if (w.status !== 'enabled')
      throw new ApiError('invalid_state', 'Enable the webhook before retrying its deliveries');
    const d = await requeueDelivery(ctx.deps.sql, w.id, ctx.params.delivery_id!);
    if (!d) throw notFound('Delivery');
    await enqueueNow(ctx.deps.queues, { id: d.id, webhookId: d.webhook_id });
    ctx.status = 202;
    ctx.body = { object: 'webhook_delivery', id: d.id, status: d.status, next_attempt_at: iso(d.next_attempt_at) };
  },

  'POST /webhooks/:id/test': async (ctx) => {
    const body = validateTest(ctx.state.body);
    const w = await loadOwn(ctx);
    if (w.status !== 'enabled') throw new ApiError('invalid_state', 'Enable the webhook before sending a test event');
    const eventId = newId('evt');
    const d = await insertTestDelivery(ctx.deps.sql, {
      webhookId: w.id,
      orgId: w.org_id,
      eventId,
      eventType: body.type,
      body: serialise(sampleEnvelope(body.type, eventId)),
    });
    await enqueueDeliveries(ctx.deps.queues, [{ id: d.id, webhookId: d.webhook_id }]);
    ctx.status = 202;
    ctx.body = { object: 'webhook_delivery', id: d.id, event_id: eventId, event_type: body.type, status: d.status };
  },
};
