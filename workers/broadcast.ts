// The broadcast queue: one job per batch of a send. A batch, in one transaction holding the
// broadcast row: lock → start (first batch: fix the segment filter and template version) → page
// the segment's contacts after the cursor → classify (unsubscribed, topic opt-out, suppressed on
// live sends) → build one message per remaining contact → claim the contacts (unique per
// broadcast and contact) and store the claimed messages → count and move the cursor. After the
// commit: enqueue the deliveries in bulk, then the next batch. A job whose cursor is no longer
// the row's is stale (its batch committed), so a job that runs twice never repeats a batch; a
// crash before the commit leaves the cursor where it was, and the retried job does the batch.
// Cancel is seen at the lock of the next batch. An outage of Postgres or Redis is waited out by
// the job itself (the batch, then each enqueue after the commit, is tried again until the store
// answers), so a send goes on within seconds of its return; a sweeper restarts sends whose next
// job is lost all the same.
// Backpressure: while the delivery-broadcast queue holds BROADCAST_QUEUE_MAX waiting messages or
// more, a batch stores nothing and looks again PACE_MS later (the broadcast's row is touched, so
// the sweeper knows it is alive). A 100,000-contact broadcast then becomes messages as fast as
// they are delivered, instead of 100,000 rows and jobs at once: Postgres, Redis's memory and the
// transactional mail beside it are spared the burst, and a cancel leaves little to cancel.
import { Worker, type Job } from 'bullmq';
import { batchJobId, enqueueBatch } from '../shared/broadcast-jobs.js';
import { buildContactEmail, type ContactMessage } from '../shared/contact-email.js';
import {
  abandonBroadcast,
  beginSending,
  claimRecipients,
  findStalledBroadcasts,
  lockBroadcast,
  recordBatch,
  segmentPage,
  touchBroadcast,
  type BatchContact,
  type BroadcastRow,
  type Counts,
  type NewBroadcastRecipient,
} from '../shared/db/broadcasts.js';
import { insertEmails, type NewEmail, type NewRecipient } from '../shared/db/emails.js';
import type { TxSql } from '../shared/db/pool.js';
import { findSegment } from '../shared/db/segments.js';
import { findTemplateVersion, type TemplateVersionRow } from '../shared/db/templates.js';
import { streamOf } from '../shared/prom/labels.js';
import { enqueueMail, QUEUE_NAMES, TAKEOVER_LOCKS, type BroadcastJob, WORKER_RETRY } from '../shared/queues.js';
import type { SegmentFilter } from '../shared/segment-filter.js';
import { OUTAGE_WAIT_MS, retryTransient, type RetryOptions } from '../shared/transient.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { SweepTrigger } from './delivery/sweep-trigger.js';
import { runEvery } from './periodic.js';
import { logWorkerErrors } from './worker-errors.js';

export const DEFAULT_BATCH_SIZE = 500;
/** The timed sweep's grace (seconds): a send untouched this long has lost its next job. */
const SWEEP_GRACE_SECONDS = 120;
/**
 * The grace of a sweep triggered by Redis coming back or losing its data: a send whose next job
 * was lost (or whose first job the web process could not add) goes on within seconds. A send
 * untouched this long is swept; a follow-up sweep catches the ones younger than that.
 */
const TRIGGERED_GRACE_SECONDS = 5;
/** How long a batch held back by a full broadcast queue waits before it looks again. */
export const PACE_MS = 250;

type Locked = BroadcastRow & { domain_name: string };

export type BatchResult =
  | { kind: 'idle'; why: 'gone' | 'inactive' | 'stale' }
  | { kind: 'early'; delayMs: number }
  | { kind: 'paced' }
  | { kind: 'done' | 'more'; cursor: string | null; counts: Counts; emailIds: string[]; orgId: string };

/** First batch: the segment and template version every batch of this send will use. */
async function start(tx: TxSql, b: Locked): Promise<Locked | null> {
  const segment = b.segment_id ? await findSegment(tx, b.org_id, b.segment_id) : null;
  if (!segment) return null;
  let version = b.template_version;
  if (b.template_id && version === null) {
    version = (await findTemplateVersion(tx, b.org_id, b.template_id, null))?.published_version ?? null;
  }
  const row = await beginSending(tx, b.id, { filter: segment.filter, templateVersion: version });
  return { ...row, domain_name: b.domain_name };
}

function outcomeOf(b: Locked, c: BatchContact): NewBroadcastRecipient['outcome'] | null {
  if (c.unsubscribed) return 'skipped_unsubscribed';
  if (c.topic_subscription !== null && c.topic_subscription !== 'opt_in') return 'skipped_topic';
  // Test sends skip the suppression list, as test messages do (DESIGN §6).
  if (b.mode === 'live' && c.suppressed) return 'skipped_suppressed';
  return null;
}

function messageOf(b: Locked, template: TemplateVersionRow | null, links: ContactMessage['links']): ContactMessage {
  return {
    links,
    orgId: b.org_id,
    keyId: b.key_id,
    mode: b.mode,
    source: 'broadcast',
    domain: { id: b.domain_id, name: b.domain_name },
    from: b.from_address,
    replyTo: b.reply_to,
    subject: b.subject,
    html: b.html,
    text: b.text,
    previewText: b.preview_text,
    kind: b.kind ?? 'broadcast',
    topicId: b.topic_id,
    tags: [{ name: 'broadcast_id', value: b.id }],
    template,
  };
}

/** Each contact's outcome, and the message of every contact that is to receive one. */
function build(
  b: Locked,
  template: TemplateVersionRow | null | 'missing',
  contacts: BatchContact[],
  links: ContactMessage['links'],
) {
  const msg = messageOf(b, template === 'missing' ? null : template, links);
  const rows: NewBroadcastRecipient[] = [];
  const messages = new Map<string, { email: NewEmail; recipient: NewRecipient }>();
  for (const c of contacts) {
    const skip = outcomeOf(b, c);
    if (skip) {
      rows.push({ contact_id: c.id, email_id: null, outcome: skip, detail: null });
      continue;
    }
    try {
      if (template === 'missing') throw new Error('the template was deleted or has no published version');
      const m = buildContactEmail(msg, c);
      messages.set(c.id, m);
      rows.push({ contact_id: c.id, email_id: m.email.id, outcome: 'sent', detail: null });
    } catch (err) {
      rows.push({ contact_id: c.id, email_id: null, outcome: 'failed', detail: (err as Error).message.slice(0, 500) });
    }
  }
  return { rows, messages };
}

interface BatchContext {
  batchSize: number;
  queueFull: boolean;
  /** The install's base URL and link secret, for `{{{RESEND_UNSUBSCRIBE_URL}}}`. */
  links: NonNullable<ContactMessage['links']>;
}

async function runBatch(
  tx: TxSql,
  job: BroadcastJob,
  { batchSize, queueFull, links }: BatchContext,
): Promise<BatchResult> {
  let b = await lockBroadcast(tx, job.broadcastId);
  if (!b) return { kind: 'idle', why: 'gone' };
  if (b.status !== 'scheduled' && b.status !== 'sending') return { kind: 'idle', why: 'inactive' };
  if (b.cursor !== job.after) return { kind: 'idle', why: 'stale' };
  if (b.status === 'scheduled' && b.scheduled_at && b.scheduled_at.getTime() > Date.now() + 1000) {
    return { kind: 'early', delayMs: b.scheduled_at.getTime() - Date.now() };
  }
  if (queueFull) {
    await touchBroadcast(tx, b.id);
    return { kind: 'paced' };
  }
  if (b.segment_filter === null) {
    b = await start(tx, b);
    if (!b) {
      await abandonBroadcast(tx, job.broadcastId);
      return { kind: 'idle', why: 'gone' };
    }
  }
  const filter = b.segment_filter as SegmentFilter;
  const contacts = await segmentPage(tx, { ...b, filter }, batchSize);
  const template = b.template_id ? await findTemplateVersion(tx, b.org_id, b.template_id, b.template_version) : null;
  const usable = template === null ? null : template?.version != null ? template : 'missing';
  const { rows, messages } = build(b, b.template_id ? (usable ?? 'missing') : null, contacts, links);
  const claimed = new Set(await claimRecipients(tx, b.id, rows));
  const kept = [...messages].filter(([contactId]) => claimed.has(contactId)).map(([, m]) => m);
  await insertEmails(
    tx,
    kept.map((m) => m.email),
    kept.map((m) => m.recipient),
    [],
  );
  const counts: Counts = { sent: 0, skipped_unsubscribed: 0, skipped_suppressed: 0, skipped_topic: 0, failed: 0 };
  for (const r of rows) if (claimed.has(r.contact_id)) counts[r.outcome] += 1;
  const cursor = contacts.at(-1)?.id ?? null;
  const done = contacts.length < batchSize;
  await recordBatch(tx, b.id, { counts, cursor, done });
  return { kind: done ? 'done' : 'more', cursor, counts, emailIds: kept.map((m) => m.email.id), orgId: b.org_id };
}

/**
 * Whether the delivery-broadcast queue holds BROADCAST_QUEUE_MAX waiting messages or more. Read
 * before the batch's transaction (never a Redis call while the broadcast's row is locked); Redis
 * trouble answers no, and the enqueue after the batch meets it.
 */
async function queueFull(deps: WorkerDeps): Promise<boolean> {
  const max = deps.config.broadcastQueueMax;
  if (max <= 0) return false;
  try {
    return (await deps.queues['delivery-broadcast'].waiting()) >= max;
  } catch {
    return false;
  }
}

/** How a batch waits out an outage: told when it starts waiting, stopped when the worker closes. */
export type OutageWait = Pick<RetryOptions, 'onWait' | 'stopped'>;

/**
 * One batch of a send; enqueues its deliveries and the next batch after the commit. An outage of
 * Postgres or Redis is waited out: the batch runs again from its lock (a batch whose commit
 * landed finds its cursor moved, and is not repeated), an enqueue after the commit is tried
 * again with what the commit stored.
 */
export async function processBroadcastBatch(
  deps: WorkerDeps,
  job: BroadcastJob,
  batchSize = DEFAULT_BATCH_SIZE,
  wait: OutageWait = {},
): Promise<BatchResult> {
  const untilAnswered = <T>(fn: () => Promise<T>) => retryTransient(fn, { maxMs: OUTAGE_WAIT_MS, ...wait });
  const full = await queueFull(deps);
  const links = { baseUrl: deps.config.baseUrl, secret: deps.config.secretKey };
  const result = await untilAnswered(() =>
    deps.sql.begin((tx) => runBatch(tx, job, { batchSize, queueFull: full, links })),
  );
  if (result.kind === 'paced') {
    const jobId = `${batchJobId(job.broadcastId, job.after)}-paced-${Date.now()}`;
    await untilAnswered(() => enqueueBatch(deps.queues, job.broadcastId, job.after, { delayMs: PACE_MS, jobId }));
    return result;
  }
  if (result.kind === 'early') {
    const jobId = `${job.broadcastId}-start-${Date.now() + result.delayMs}`;
    await untilAnswered(() =>
      enqueueBatch(deps.queues, job.broadcastId, job.after, { delayMs: result.delayMs, jobId }),
    );
    return result;
  }
  if (result.kind === 'idle') return result;
  if (result.emailIds.length > 0) {
    deps.prom.inc('tern_emails_accepted_total', ['broadcast', streamOf('broadcast')], result.emailIds.length);
    // Job ids are the email ids: an enqueue tried again adds no second job.
    const requests = result.emailIds.map((emailId) => ({
      emailId,
      orgId: result.orgId,
      stream: 'broadcast' as const,
      jobId: emailId,
    }));
    await untilAnswered(() => enqueueMail(deps.queues, requests));
  }
  if (result.kind === 'more') await untilAnswered(() => enqueueBatch(deps.queues, job.broadcastId, result.cursor));
  return result;
}

/** Re-enqueues the batch of sends that stalled (their next job lost to Redis); returns how many. */
export async function sweepBroadcasts(
  deps: WorkerDeps,
  graceSeconds = SWEEP_GRACE_SECONDS,
  limit = 100,
): Promise<number> {
  const stalled = await findStalledBroadcasts(deps.sql, graceSeconds, limit);
  const stamp = Date.now();
  for (const b of stalled) {
    await enqueueBatch(deps.queues, b.id, b.cursor, { jobId: `${b.id}-${b.cursor ?? 'start'}-sweep-${stamp}` });
  }
  if (stalled.length > 0) {
    deps.logger.warn({ event: 'BROADCAST_SWEEP_REQUEUED', count: stalled.length }, 're-enqueued stalled broadcasts');
  }
  return stalled.length;
}

export interface BroadcastWorkerOptions {
  batchSize?: number;
  concurrency?: number;
  /** 0 disables the sweeper. */
  sweepEveryMs?: number;
}

export function startBroadcastWorker(deps: WorkerDeps, opts: BroadcastWorkerOptions = {}): Worker<BroadcastJob> {
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  let closing = false;
  const worker = new Worker<BroadcastJob>(
    QUEUE_NAMES.broadcast,
    async (job: Job<BroadcastJob>) => {
      const r = await processBroadcastBatch(deps, job.data, batchSize, {
        stopped: () => closing,
        onWait: (err) =>
          deps.logger.warn(
            { event: 'BROADCAST_WAITING_FOR_STORE', broadcastId: job.data.broadcastId, err },
            'broadcast batch waiting for Postgres/Redis',
          ),
      });
      return r.kind === 'done' || r.kind === 'more' ? { kind: r.kind, counts: r.counts } : r;
    },
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency: opts.concurrency ?? 4,
      ...TAKEOVER_LOCKS,
    },
  );
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'BROADCAST_BATCH_FAILED', broadcastId: job?.data.broadcastId, err }, 'batch failed'),
  );
  logWorkerErrors(worker, deps.logger, 'BROADCAST_WORKER_ERROR');
  worker.on('closing', () => (closing = true));
  const every = opts.sweepEveryMs ?? 60_000;
  if (every > 0) {
    const stop = runEvery(
      every,
      () => sweepBroadcasts(deps),
      (err) => deps.logger.warn({ event: 'BROADCAST_SWEEP_FAILED', err }, 'broadcast sweep failed'),
    );
    const trigger = new SweepTrigger(
      deps,
      (why) =>
        sweepBroadcasts(deps, TRIGGERED_GRACE_SECONDS).catch((err: unknown) =>
          deps.logger.warn({ event: 'BROADCAST_SWEEP_FAILED', err, why }, 'broadcast sweep failed'),
        ),
      (TRIGGERED_GRACE_SECONDS + 1) * 1000,
      { sentinel: deps.redisKeys.broadcastSentinel },
    );
    worker.on('closing', () => {
      stop();
      void trigger.close();
    });
  }
  return worker;
}

export const broadcastConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.broadcast,
  start: (deps) => startBroadcastWorker(deps),
};
