// webhook-fanout: one job per recorded event (job id = event id); the jobs running at once are
// fanned out together. Builds each event's body once, stores one delivery per enabled endpoint of
// the organization whose filter takes the event type (unique per event and endpoint, so a re-run
// creates nothing new), then enqueues them.
// Test-mode events fan out like live ones (SPEC: test keys fire webhooks as normal). The statement
// that stores the deliveries marks the events fanned out; a sweeper re-enqueues published events
// that never were (their job lost to a Redis flush or failover, or given up after its retries).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { insertFanout, type NewDelivery } from '../shared/db/webhook-deliveries.js';
import { loadEventsForFanout, unfannedEventIds } from '../shared/db/webhook-events.js';
import { eventJobOptions } from '../shared/events.js';
import { QUEUE_NAMES, type EventJob } from '../shared/queues.js';
import { buildEnvelope, serialise } from '../shared/webhook-payload.js';
import { enqueueDeliveries } from '../shared/webhooks.js';
import type { WorkerDeps } from './deps.js';
import type { QueueConsumer } from './registry.js';

/**
 * Fans out a batch of events: one read (events, their message fields and matching endpoints),
 * one statement storing the deliveries and marking the events, one addBulk. Returns the
 * deliveries waiting for a first attempt per event found; an event id absent from the map has
 * no row.
 */
export async function fanOutEvents(deps: WorkerDeps, eventIds: string[]): Promise<Map<string, number>> {
  const events = await loadEventsForFanout(deps.sql, eventIds);
  const rows: NewDelivery[] = [];
  for (const ev of events) {
    if (ev.webhook_ids.length === 0) continue;
    const body = serialise(buildEnvelope(ev));
    for (const webhookId of ev.webhook_ids) {
      rows.push({ webhookId, orgId: ev.org_id, eventId: ev.id, eventType: ev.type, body });
    }
  }
  const counts = new Map(events.map((ev) => [ev.id, 0]));
  if (events.length === 0) return counts;
  const pending = await insertFanout(
    deps.sql,
    events.map((ev) => ev.id),
    rows,
  );
  await enqueueDeliveries(
    deps.queues,
    pending.map((d) => ({ id: d.id, webhookId: d.webhook_id })),
  );
  for (const d of pending) counts.set(d.event_id, (counts.get(d.event_id) ?? 0) + 1);
  return counts;
}

export async function fanOutEvent(deps: WorkerDeps, eventId: string): Promise<number> {
  const n = (await fanOutEvents(deps, [eventId])).get(eventId);
  // An event id with no row is a publication bug, not a transient fault: retrying will not help.
  if (n === undefined) throw new UnrecoverableError(`event ${eventId} not found`);
  return n;
}

/**
 * Groups the events of the jobs running at once into batches: a job that arrives while a batch
 * is being written joins the next one, so an idle worker adds no wait and a busy one does a
 * handful of statements per batch instead of per event.
 */
class FanoutBatcher {
  private waiting: { eventId: string; resolve(n: number): void; reject(err: unknown): void }[] = [];
  private running = false;

  constructor(
    private readonly deps: WorkerDeps,
    private readonly max = 200,
  ) {}

  add(eventId: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ eventId, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.max);
        try {
          const counts = await fanOutEvents(this.deps, [...new Set(batch.map((b) => b.eventId))]);
          for (const b of batch) {
            const n = counts.get(b.eventId);
            if (n === undefined) b.reject(new UnrecoverableError(`event ${b.eventId} not found`));
            else b.resolve(n);
          }
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
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
  const batcher = new FanoutBatcher(deps);
  const worker = new Worker<EventJob>(
    QUEUE_NAMES.webhookFanout,
    async (job: Job<EventJob>) => ({ deliveries: await batcher.add(job.data.eventId) }),
    // Many jobs at once make the batches: they cost a promise each while their batch is written.
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: opts.concurrency ?? 64 },
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
