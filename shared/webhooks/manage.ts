// Webhook endpoint actions shared by the API (api/routes/webhooks.ts) and the console
// (api/console/webhooks.ts): creating an endpoint, a test send, retrying one delivery and
// replaying the failed deliveries of a time range. One copy of each rule.
import {
  insertTestDelivery,
  requeueDelivery,
  requeueFailedDeliveries,
  type DeliveryRow,
} from '../db/webhook-deliveries.js';
import { insertWebhook, type WebhookRow } from '../db/webhooks.js';
import type { Db } from '../db/pool.js';
import { ApiError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Queues } from '../queues.js';
import type { SecretBox } from '../secrets.js';
import { sampleEnvelope, serialise } from './payload.js';
import { checkWebhookUrl, enqueueDeliveries, enqueueNow, newSigningSecret } from './rules.js';

export interface WebhookDeps {
  sql: Db;
  queues: Pick<Queues, 'webhook-delivery'>;
}

/** The most deliveries one replay requeues (a larger outage is replayed in several ranges). */
export const REPLAY_LIMIT = 5000;

export async function createEndpoint(
  sql: Db,
  box: SecretBox,
  allowPrivate: boolean,
  w: { orgId: string; url: string; events: string[]; description: string | null },
  field = 'body.url',
): Promise<WebhookRow> {
  const url = checkWebhookUrl(w.url, allowPrivate, field);
  return await insertWebhook(sql, box, { ...w, url, secret: newSigningSecret() });
}

function mustBeEnabled(w: WebhookRow, what: string): void {
  if (w.status !== 'enabled') throw new ApiError('invalid_state', `Enable the webhook before ${what}`);
}

/** Queues a sample event of `type` for the endpoint (a delivery of its own, no events row). */
export async function sendTestEvent(
  deps: WebhookDeps,
  w: WebhookRow,
  type: string,
): Promise<{ delivery: DeliveryRow; eventId: string }> {
  mustBeEnabled(w, 'sending a test event');
  const eventId = newId('evt');
  const delivery = await insertTestDelivery(deps.sql, {
    webhookId: w.id,
    orgId: w.org_id,
    eventId,
    eventType: type,
    body: serialise(sampleEnvelope(type, eventId)),
  });
  await enqueueDeliveries(deps.queues, [{ id: delivery.id, webhookId: delivery.webhook_id }]);
  return { delivery, eventId };
}

/** Makes one delivery due now (same id and body) and runs its job now. */
export async function retryDelivery(deps: WebhookDeps, w: WebhookRow, deliveryId: string): Promise<DeliveryRow> {
  mustBeEnabled(w, 'retrying its deliveries');
  const d = await requeueDelivery(deps.sql, w.id, deliveryId);
  if (!d) throw notFound('Delivery');
  await enqueueNow(deps.queues, { id: d.id, webhookId: d.webhook_id });
  return d;
}

/** Requeues every failed delivery of the endpoint created in [from, to) (at most REPLAY_LIMIT); returns how many. */
export async function replayFailed(deps: WebhookDeps, w: WebhookRow, range: { from: Date; to: Date }): Promise<number> {
  mustBeEnabled(w, 'replaying its deliveries');
  const rows = await requeueFailedDeliveries(deps.sql, w.id, range, REPLAY_LIMIT);
  for (const r of rows) await enqueueNow(deps.queues, { id: r.id, webhookId: r.webhook_id });
  return rows.length;
}
