// webhook-fanout: one job per recorded event (job id = event id). Builds the event's body once,
// stores one delivery per enabled endpoint of the organization whose filter takes the event
// type (unique per event and endpoint, so a re-run creates nothing new), then enqueues them.
// Test-mode events fan out like live ones (SPEC: test keys fire webhooks as normal). The same
// transaction marks the event fanned out; a sweeper re-enqueues published events that never were
// (their job lost to a Redis flush or failover, or given up after its retries).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { insertDeliveries } from '../shared/db/webhook-deliveries.js';
import {
  loadEventForWebhook,
  markEventFannedOut,
  unfannedEventIds,
  type EventForWebhook,
} from '../shared/db/webhook-events.js';
import { matchingWebhooks } from '../shared/db/webhooks.js';
import { eventJobOptions } from '../shared/events.js';
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
  const rows = endpoints.map((w) => ({ webhookId: w.id, orgId: ev.org_id, eventId: ev.id, eventType: ev.type, body }));
  const pending = await deps.sql.begin(async (tx) => {
    const ids = await insertDeliveries(tx, ev.id, rows);
    await markEventFannedOut(tx, ev.id);
    return ids;
  });
  await enqueueDeliveries(
    deps.queues,
    pending.map((d) => d.id),
  );
  return pending.length;
}

/**
 * Re-enqueues the fan-out of events published more than `graceMs` ago and never fanned out.
 * A job still waiting, delayed or running is left alone; a finished one is replaced. Returns
 * how many events got a job again.
 */
export async function sweepFanouts(deps: WorkerDeps, graceMs = 60_000, limit = 500): Promise<number> {
  const queue = deps.queues[QUEUE_NAMES.webhookFanout];
  const ids = await unfannedEventIds(deps.sql, graceMs, limit);
  const missing: string[] = [];
  for (const id of ids) {
    const job = await queue.getJob(id);
    if (job) {
      const state = await job.getState();
      if (state !== 'completed' && state !== 'failed' && state !== 'unknown') continue;
      await job.remove().catch(() => {});
    }
    missing.push(id);
  }
  if (missing.length === 0) return 0;
  await queue.addBulk(missing.map((eventId) => ({ name: 'event', data: { eventId }, opts: eventJobOptions(eventId) })));
  deps.logger.warn({ event: 'WEBHOOK_FANOUT_SWEEP_REQUEUED', count: missing.length }, 'events had no fan-out job');
  return missing.length;
}

export function startWebhookFanout(
  deps: WorkerDeps,
  opts: { concurrency?: number; sweepEveryMs?: number } = {},
): Worker<EventJob> {
  const worker = new Worker<EventJob>(
    QUEUE_NAMES.webhookFanout,
    async (job: Job<EventJob>) => ({ deliveries: await fanOutEvent(deps, job.data.eventId) }),
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: opts.concurrency ?? 16 },
  );
  worker.on('failed', (job, err) => {
    deps.logger.warn({ event: 'WEBHOOK_FANOUT_FAILED', eventId: job?.data.eventId, err }, 'webhook fan-out failed');
  });
  worker.on('error', (err) => deps.logger.error({ event: 'WEBHOOK_FANOUT_WORKER_ERROR', err }, 'worker error'));
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    sweepFanouts(deps)
      .catch((err: unknown) => deps.logger.warn({ event: 'WEBHOOK_FANOUT_SWEEP_FAILED', err }, 'fan-out sweep failed'))
      .finally(() => {
        sweeping = false;
      });
  }, opts.sweepEveryMs ?? 30_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}

export const webhookFanoutConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.webhookFanout,
  start: (deps) => startWebhookFanout(deps),
};
