// The `retention` queue (DESIGN §15; docs/operations.md "Retention"): a repeatable job, every
// RETENTION_PURGE_SECONDS, purges what each organization's retention settings expired — message
// content (bodies, raw MIME, attachments, inbound content) after `retention.content_days`, events
// and webhook deliveries after `retention.events_days`. It works in batches of
// RETENTION_BATCH_SIZE rows, pausing RETENTION_PAUSE_MS between them, and stops when its budget of
// RETENTION_BUDGET_SECONDS is spent; the next run carries on. Metrics rollups are never touched.
import { Worker, type Job } from 'bullmq';
import {
  listRetentionOrgs,
  purgeEmailContent,
  purgeEvents,
  purgeInboundContent,
  purgeRequestLogs,
  purgeWebhookDeliveries,
  type RetentionOrg,
} from '../shared/db/retention.js';
import type { Db } from '../shared/db/pool.js';
import { QUEUE_NAMES, type RetentionJob, WORKER_RETRY } from '../shared/queues.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { logWorkerErrors } from './worker-errors.js';

const SCHEDULER = 'retention-purge';

export interface PurgeOptions {
  batchSize?: number;
  budgetMs?: number;
  pauseMs?: number;
}

export interface PurgeCounts {
  emails: number;
  inbound: number;
  events: number;
  webhookDeliveries: number;
  requestLogs: number;
  /** False when the budget ran out before everything expired was purged. */
  complete: boolean;
}

type Step = { name: keyof Omit<PurgeCounts, 'complete'>; days: (o: RetentionOrg) => number };
type PurgeFn = (db: Db, orgId: string, days: number, limit: number) => Promise<number>;

const STEPS: (Step & { run: PurgeFn })[] = [
  { name: 'emails', days: (o) => o.content_days, run: purgeEmailContent },
  { name: 'inbound', days: (o) => o.content_days, run: purgeInboundContent },
  { name: 'events', days: (o) => o.events_days, run: purgeEvents },
  { name: 'webhookDeliveries', days: (o) => o.events_days, run: purgeWebhookDeliveries },
  { name: 'requestLogs', days: (o) => o.request_log_days, run: purgeRequestLogs },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One purge run: every organization (or `orgId`), step after step, batch after batch, within the budget. */
export async function purgeExpired(deps: WorkerDeps, orgId?: string, opts: PurgeOptions = {}): Promise<PurgeCounts> {
  const batch = opts.batchSize ?? deps.config.retentionBatchSize;
  const deadline = Date.now() + (opts.budgetMs ?? deps.config.retentionBudgetSeconds * 1000);
  const pause = opts.pauseMs ?? deps.config.retentionPauseMs;
  const counts: PurgeCounts = {
    emails: 0,
    inbound: 0,
    events: 0,
    webhookDeliveries: 0,
    requestLogs: 0,
    complete: true,
  };
  const orgs = (await listRetentionOrgs(deps.sql)).filter((o) => !orgId || o.id === orgId);
  for (const org of orgs) {
    for (const step of STEPS) {
      for (;;) {
        if (Date.now() >= deadline) return { ...counts, complete: false };
        const n = await step.run(deps.sql, org.id, step.days(org), batch);
        counts[step.name] += n;
        if (n < batch) break;
        if (pause > 0) await sleep(pause);
      }
    }
  }
  return counts;
}

export function startRetentionWorker(deps: WorkerDeps): Worker<RetentionJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.retention });
  const worker = new Worker<RetentionJob>(
    QUEUE_NAMES.retention,
    async (job: Job<RetentionJob>) => {
      const counts = await purgeExpired(deps, job.data.orgId);
      log.info({ ...counts }, 'retention purge run');
      return counts;
    },
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, ...WORKER_RETRY, concurrency: 1 },
  );
  worker.on('failed', (job, err) => log.warn({ event: 'RETENTION_PURGE_FAILED', err }, 'retention purge failed'));
  logWorkerErrors(worker, log, 'RETENTION_WORKER_ERROR');
  return worker;
}

/** Puts the repeatable job in place (idempotent: every worker start re-asserts it). */
export async function scheduleRetention(deps: WorkerDeps): Promise<void> {
  await deps.queues.retention.upsertJobScheduler(
    SCHEDULER,
    { every: Math.round(deps.config.retentionPurgeSeconds * 1000) },
    { name: 'purge', data: {} },
  );
}

/** How often a running worker re-asserts the schedule (a Redis that lost its data lost it too). */
export const RETENTION_RESCHEDULE_MS = 60_000;

/** The retention consumer, re-asserting its schedule every `rescheduleMs` (tests shorten it). */
export function retentionConsumerWith(rescheduleMs: number): QueueConsumer {
  return { queue: QUEUE_NAMES.retention, start: (deps) => startRetention(deps, rescheduleMs) };
}

export const retentionConsumer: QueueConsumer = retentionConsumerWith(RETENTION_RESCHEDULE_MS);

async function startRetention(deps: WorkerDeps, rescheduleMs: number): Promise<Worker<RetentionJob>> {
  const worker = startRetentionWorker(deps);
  // The schedule is a Redis record: a Redis restarted without its data (or flushed) forgets it,
  // and with it every later purge. Each worker puts it back every minute (idempotent; the next
  // run keeps its time), so purges resume within a minute of such a loss, without a restart.
  let failing = false;
  const assert = async () => {
    try {
      await scheduleRetention(deps);
      if (failing) deps.logger.info({ event: 'RETENTION_SCHEDULED' }, 'retention purge scheduled again');
      failing = false;
    } catch (err) {
      if (!failing) {
        deps.logger.warn(
          { event: 'RETENTION_SCHEDULE_FAILED', err },
          'retention purge not scheduled; tried again every minute',
        );
      }
      failing = true;
    }
  };
  await assert();
  const timer = setInterval(() => void assert(), rescheduleMs).unref();
  worker.once('closing', () => clearInterval(timer));
  return worker;
}
