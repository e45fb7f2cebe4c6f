// webhook-fanout: one job per recorded event (job id = event id). Builds the event's body once,
// stores one delivery per enabled endpoint of the organization whose filter takes the event
// type (unique per event and endpoint, so a re-run creates nothing new), then enqueues them.
// Test-mode events fan out like live ones (SPEC: test keys fire webhooks as normal).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { insertDeliveries } from '../shared/db/webhook-deliveries.js';
import { loadEventForWebhook, type EventForWebhook } from '../shared/db/webhook-events.js';
import { matchingWebhooks } from '../shared/db/webhooks.js';
import { QUEUE_NAMES, type EventJob } from '../shared/queues.js';
import { buildEnvelope, serialise } from '../shared/webhook-payload.js';
import { enqueueDeliveries } from '../shared/webhooks.js';
import type { WorkerDeps } from './deps.js';
import type { QueueConsumer } from './registry.js';

async function loadEvent(deps: WorkerDeps, eventId: string): Promise<EventForWebhook> {
  const ev = await loadEventForWebhook(deps.sql, eventId);
  // An event id with no row is a publication bug, not a transient fault: retrying will not help.
  if (!ev) throw new UnrecoverableError(`event ${eventId} not found`);
  return ev;
}

export async function fanOutEvent(deps: WorkerDeps, eventId: string): Promise<number> {
  const ev = await loadEvent(deps, eventId);
  const endpoints = await matchingWebhooks(deps.sql, ev.org_id, ev.type);
  const body = endpoints.length > 0 ? serialise(buildEnvelope(ev)) : Buffer.alloc(0);
  const pending = await insertDeliveries(
    deps.sql,
    ev.id,
    endpoints.map((w) => ({ webhookId: w.id, orgId: ev.org_id, eventId: ev.id, eventType: ev.type, body })),
  );
  await enqueueDeliveries(
    deps.queues,
    pending.map((d) => d.id),
  );
  return pending.length;
}

export function startWebhookFanout(deps: WorkerDeps, opts: { concurrency?: number } = {}): Worker<EventJob> {
  const worker = new Worker<EventJob>(
    QUEUE_NAMES.webhookFanout,
    async (job: Job<EventJob>) => ({ deliveries: await fanOutEvent(deps, job.data.eventId) }),
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: opts.concurrency ?? 16 },
  );
  worker.on('failed', (job, err) => {
    deps.logger.warn({ event: 'WEBHOOK_FANOUT_FAILED', eventId: job?.data.eventId, err }, 'webhook fan-out failed');
  });
  worker.on('error', (err) => deps.logger.error({ event: 'WEBHOOK_FANOUT_WORKER_ERROR', err }, 'worker error'));
  return worker;
}

export const webhookFanoutConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.webhookFanout,
  start: (deps) => startWebhookFanout(deps),
};
