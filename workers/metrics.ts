// Metrics rollup consumer: every recorded event has a job on the metrics queue. Jobs are taken
// many at a time (high concurrency) and their event ids gathered into one batch, counted in one
// transaction (shared/db/metrics.ts rollupEvents: exactly once, by event id). A sweeper recounts
// events whose jobs were lost. Stops with worker.close(): jobs in hand finish their batch.
import { Worker, type Job } from 'bullmq';
import { pendingEventIds, rollupEvents } from '../shared/db/metrics.js';
import { republishPending } from '../shared/events.js';
import type { Sql } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import { QUEUE_NAMES, type EventJob } from '../shared/queues.js';
import type { WorkerDeps } from './deps.js';

export interface RollupOptions {
  /** Largest batch counted in one transaction. */
  maxBatch?: number;
  /** How long the first id of a batch waits for company. */
  maxWaitMs?: number;
  concurrency?: number;
  sweepEveryMs?: number;
}

/** Gathers ids into batches; each caller's promise settles with its batch. */
export class RollupBatcher {
  private ids: string[] = [];
  private waiters: { resolve(): void; reject(err: unknown): void }[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly flushFn: (ids: string[]) => Promise<unknown>,
    private readonly maxBatch: number,
    private readonly maxWaitMs: number,
  ) {}

  add(id: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.ids.push(id);
      this.waiters.push({ resolve, reject });
      if (this.ids.length >= this.maxBatch) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ids = this.ids;
    const waiters = this.waiters;
    this.ids = [];
    this.waiters = [];
    if (ids.length === 0) return;
    this.flushFn(ids).then(
      () => waiters.forEach((w) => w.resolve()),
      (err: unknown) => waiters.forEach((w) => w.reject(err)),
    );
  }
}

async function sweep(sql: Sql, logger: Logger): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const ids = await pendingEventIds(sql, 60_000, 1000);
    if (ids.length === 0) return;
    const counted = await rollupEvents(sql, ids);
    logger.info({ events: ids.length, counted }, 'metrics sweeper counted events whose jobs were lost');
    if (ids.length < 1000) return;
  }
}

export function startMetricsWorker(deps: WorkerDeps, opts: RollupOptions = {}): Worker<EventJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.metrics });
  const batcher = new RollupBatcher((ids) => rollupEvents(deps.sql, ids), opts.maxBatch ?? 500, opts.maxWaitMs ?? 20);
  const worker = new Worker<EventJob>(QUEUE_NAMES.metrics, (job: Job<EventJob>) => batcher.add(job.data.eventId), {
    connection: deps.bull,
    prefix: deps.redisKeys.bullPrefix,
    concurrency: opts.concurrency ?? 500,
  });
  worker.on('failed', (job, err) => {
    log.warn({ event: 'METRICS_ROLLUP_FAILED', err, eventId: job?.data.eventId }, 'rollup batch failed; will retry');
  });
  worker.on('error', (err) => log.error({ event: 'METRICS_WORKER_ERROR', err }, 'metrics worker error'));
  const timer = setInterval(() => {
    // Events whose publication failed after their transaction committed reach every consumer again.
    republishPending(deps.sql, deps.queues).catch((err: unknown) =>
      log.warn({ event: 'EVENTS_REPUBLISH_FAILED', err }, 'republishing unpublished events failed'),
    );
    sweep(deps.sql, log).catch((err: unknown) => log.warn({ event: 'METRICS_SWEEP_FAILED', err }, 'sweep failed'));
  }, opts.sweepEveryMs ?? 60_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}
