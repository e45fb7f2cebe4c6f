// webhook-fanout consumer. The event log in Postgres is the queue of record, as for the metrics
// rollup: each drain pass claims the oldest events not yet fanned out (events.webhooks_fanned_at
// is null) with SKIP LOCKED, builds each event's body once, and in the claiming transaction
// stores one delivery per enabled endpoint of the organization whose filter takes the event type
// (unique per event and endpoint) and marks the events; then one addBulk enqueues the deliveries.
// Jobs on the queue are wake-ups (one per `publishEvents` call, payload `{eventId}` kept for
// compatibility): a job completes when a drain that started after it has finished. A short timer
// drains too, so an event whose wake-up Redis lost waits at most that long.
// Test-mode events fan out like live ones (SPEC: test keys fire webhooks as normal).
import { UnrecoverableError, Worker } from 'bullmq';
import { insertFanout, type NewDelivery } from '../shared/db/webhook-deliveries.js';
import { claimEventsForFanout, loadEventsForFanout, type EventToFanOut } from '../shared/db/webhook-events.js';
import type { Db } from '../shared/db/pool.js';
import { QUEUE_NAMES, type EventJob, WORKER_RETRY } from '../shared/queues.js';
import { retryTransient } from '../shared/transient.js';
import { buildEnvelope, serialise } from '../shared/webhooks/payload.js';
import { enqueueDeliveries } from '../shared/webhooks/rules.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { startDomainRechecks } from './domain-recheck.js';
import { startReputationWatch } from './reputation-watch.js';
import { Drainer } from './drainer.js';
import { enqueueOrgEventMail, storeOrgEventMail } from './org-event-mail.js';
import { logWorkerErrors } from './worker-errors.js';

export interface FanoutOptions {
  /** Largest batch of events fanned out in one transaction. */
  maxBatch?: number;
  concurrency?: number;
  /** How often the timer drains (the longest a lost wake-up delays a delivery). */
  drainEveryMs?: number;
}

type PendingDelivery = { id: string; webhook_id: string; event_id: string };

/** Stores the deliveries of `events` and marks them fanned out: one statement. */
async function storeFanout(db: Db, events: EventToFanOut[]): Promise<PendingDelivery[]> {
  const rows: NewDelivery[] = [];
  for (const ev of events) {
    if (ev.webhook_ids.length === 0) continue;
    const body = serialise(buildEnvelope(ev));
    for (const webhookId of ev.webhook_ids) {
      rows.push({ webhookId, orgId: ev.org_id, eventId: ev.id, eventType: ev.type, body });
    }
  }
  return await insertFanout(
    db,
    events.map((ev) => ev.id),
    rows,
  );
}

async function enqueue(deps: WorkerDeps, pending: PendingDelivery[]): Promise<void> {
  // The deliveries are committed: a Redis away is waited out (a minute at most) rather than
  // leaving them to the delivery sweeper's next pass. Those it still loses, the sweeper re-enqueues.
  await retryTransient(
    () =>
      enqueueDeliveries(
        deps.queues,
        pending.map((d) => ({ id: d.id, webhookId: d.webhook_id })),
      ),
    { maxMs: 60_000 },
  );
}

/**
 * One drain pass: claims up to `limit` events not yet fanned out, stores their deliveries and
 * marks them in one transaction, then enqueues the deliveries. Returns how many events it claimed.
 */
export async function fanOutPending(deps: WorkerDeps, limit: number): Promise<{ claimed: number; deliveries: number }> {
  const { claimed, pending, mail } = await deps.sql.begin(async (tx) => {
    const events = await claimEventsForFanout(tx, limit);
    if (events.length === 0) return { claimed: 0, pending: [], mail: [] };
    // Organization events are also emailed to the admins: stored with the claim, so once.
    return {
      claimed: events.length,
      pending: await storeFanout(tx, events),
      mail: await storeOrgEventMail(tx, deps, events),
    };
  });
  await enqueue(deps, pending);
  await enqueueOrgEventMail(deps, mail);
  return { claimed, deliveries: pending.length };
}

/**
 * Fans out the given events whether or not they were fanned out already (a re-run creates no new
 * delivery and re-enqueues those still waiting for a first attempt). Returns the deliveries
 * waiting for a first attempt per event found; an event id absent from the map has no row.
 */
export async function fanOutEvents(deps: WorkerDeps, eventIds: string[]): Promise<Map<string, number>> {
  const events = await loadEventsForFanout(deps.sql, eventIds);
  const counts = new Map(events.map((ev) => [ev.id, 0]));
  if (events.length === 0) return counts;
  const pending = await storeFanout(deps.sql, events);
  await enqueue(deps, pending);
  for (const d of pending) counts.set(d.event_id, (counts.get(d.event_id) ?? 0) + 1);
  return counts;
}

export async function fanOutEvent(deps: WorkerDeps, eventId: string): Promise<number> {
  const n = (await fanOutEvents(deps, [eventId])).get(eventId);
  if (n === undefined) throw new UnrecoverableError(`event ${eventId} not found`);
  return n;
}

export function startWebhookFanout(deps: WorkerDeps, opts: FanoutOptions = {}): Worker<EventJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.webhookFanout });
  const batch = opts.maxBatch ?? 500;
  const drainer = new Drainer(() => fanOutPending(deps, batch), batch);
  const worker = new Worker<EventJob>(QUEUE_NAMES.webhookFanout, () => drainer.kick(), {
    connection: deps.bull,
    prefix: deps.redisKeys.bullPrefix,
    ...WORKER_RETRY,
    // Wake-ups cost a promise each while they wait for the drain.
    concurrency: opts.concurrency ?? 50,
  });
  worker.on('failed', (job, err) => {
    log.warn({ event: 'WEBHOOK_FANOUT_FAILED', eventId: job?.data.eventId, err }, 'fan-out drain failed; will retry');
  });
  logWorkerErrors(worker, log, 'WEBHOOK_FANOUT_WORKER_ERROR');
  const drain = () =>
    drainer
      .kick()
      .catch((err: unknown) => log.warn({ event: 'WEBHOOK_FANOUT_DRAIN_FAILED', err }, 'timed drain failed'));
  // Events left from a stop or a lost wake-up go out at start, not one timer period later.
  void drain();
  const timer = setInterval(() => void drain(), opts.drainEveryMs ?? 2_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}

export const webhookFanoutConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.webhookFanout,
  start: (deps) => {
    const worker = startWebhookFanout(deps);
    // The domains' DNS re-checks and the reputation watch produce organization events: they run
    // where those fan out.
    worker.on('closing', startDomainRechecks(deps));
    worker.on('closing', startReputationWatch(deps));
    return worker;
  },
};
