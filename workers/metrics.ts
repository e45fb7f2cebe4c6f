// Metrics rollup consumer. The event log in Postgres is the queue of record: each drain claims
// the events not yet counted (events.metrics_counted_at is null) in batches, with SKIP LOCKED so
// that several workers share the work, and counts each batch in the claiming transaction
// (shared/db/metrics.ts: exactly once by event id). Jobs on the metrics queue are wake-ups: a job
// completes when a drain that started after it has finished, so its events are counted; a job
// that fails (Postgres down) is retried. A timer drains too, for events whose wake-up was lost,
// and re-publishes events whose publication failed. Stops with worker.close().
import { Worker } from 'bullmq';
import { rollupPending } from '../shared/metrics/rollup.js';
import { republishPending } from '../shared/events.js';
import { QUEUE_NAMES, type EventJob, WORKER_RETRY } from '../shared/queues.js';
import type { WorkerDeps } from './deps.js';
import { Drainer } from './drainer.js';
import { logWorkerErrors } from './worker-errors.js';

export { Drainer };

export interface RollupOptions {
  /** Largest batch counted in one transaction. */
  maxBatch?: number;
  concurrency?: number;
  /** How often the timer drains (and re-publishes unpublished events). */
  sweepEveryMs?: number;
}

export function startMetricsWorker(deps: WorkerDeps, opts: RollupOptions = {}): Worker<EventJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.metrics });
  const batch = opts.maxBatch ?? 2000;
  const drainer = new Drainer(() => rollupPending(deps.sql, batch), batch);
  const worker = new Worker<EventJob>(QUEUE_NAMES.metrics, () => drainer.kick(), {
    connection: deps.bull,
    prefix: deps.redisKeys.bullPrefix,
    ...WORKER_RETRY,
    concurrency: opts.concurrency ?? 50,
  });
  worker.on('failed', (job, err) => {
    log.warn({ event: 'METRICS_ROLLUP_FAILED', err, eventId: job?.data.eventId }, 'rollup drain failed; will retry');
  });
  logWorkerErrors(worker, log, 'METRICS_WORKER_ERROR');
  const timer = setInterval(() => {
    // Events whose publication failed after their transaction committed reach every consumer again.
    republishPending(deps.sql, deps.queues).catch((err: unknown) =>
      log.warn({ event: 'EVENTS_REPUBLISH_FAILED', err }, 'republishing unpublished events failed'),
    );
    drainer.kick().catch((err: unknown) => log.warn({ event: 'METRICS_SWEEP_FAILED', err }, 'timed drain failed'));
  }, opts.sweepEveryMs ?? 10_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}
