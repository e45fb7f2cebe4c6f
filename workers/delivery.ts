// The delivery queue: one job per message (or per retry of its pending recipients). The handler
// is a list of named steps: load → checkPause → claim → checkSuppression → checkCaps → markSent →
// deliver (render, DKIM, VERP, SMTP; or the test-mode simulation) → finish. Each recipient's
// attempt is recorded before SMTP (attempts + 1, in-flight marker) and its result after, so a
// job re-run after a 250 never sends again. A repeatable `sweep` job re-enqueues stuck messages.
import { Worker, type Job, type WorkerOptions } from 'bullmq';
import {
  claimEmail,
  finishEmail,
  getDeliveryEmail,
  holdRecipients,
  leaseRecipients,
  markSent,
  pendingRecipients,
  releaseScheduled,
  reserveCap,
  unclaimEmail,
  type DeliveryEmail,
  type DeliveryRecipient,
} from '../shared/db/delivery.js';
import { findSuppressedEmails } from '../shared/db/suppressions.js';
import { publishEvents, recordEvents } from '../shared/events.js';
import { Outbound } from '../shared/mail/outbound/index.js';
import { providerOf } from '../shared/mail/providers.js';
import { QUEUE_NAMES, type DeliveryJob } from '../shared/queues.js';
import type { WorkerDeps } from './deps.js';
import { evaluateAlertRules } from './delivery/alerts.js';
import { nextUtcMidnight, utcDate, warmupCap } from './delivery/caps.js';
import { eventOf, recordVerdict, type RecipientRef } from './delivery/record.js';
import { scheduleNext, startSweeper, SWEEP_JOB } from './delivery/schedule.js';
import { deliverLive, type Leased, type LiveContext } from './delivery/send.js';
import { DEFAULT_THROTTLE, ProviderThrottle, type ThrottleOptions } from './delivery/throttle.js';
import * as tracker from '../shared/tracking.js';
import { simulate, type Verdict } from './delivery/verdict.js';

/** An attempt with no recorded result older than this may be taken over by another job. */
export const ATTEMPT_LEASE_SECONDS = 15 * 60;

type Ctx = LiveContext & { jobId: string };

/**
 * A scheduled message is released when its time has come. A job that fires early (the message
 * was rescheduled later while its job was already running) re-delays itself to `scheduled_at`.
 */
async function releaseSchedule(deps: WorkerDeps, email: DeliveryEmail): Promise<boolean> {
  if (email.status !== 'scheduled') return true;
  const at = email.scheduled_at?.getTime() ?? 0;
  if (at > Date.now() + 1000) {
    await deps.queues.delivery.add(
      'email',
      { emailId: email.id },
      { jobId: `${email.id}-${at}`, delay: at - Date.now() },
    );
    return false;
  }
  return await releaseScheduled(deps.sql, email.id);
}

async function load(deps: WorkerDeps, emailId: string) {
  let email = await getDeliveryEmail(deps.sql, emailId);
  if (!email || email.status === 'canceled' || email.status === 'failed') return null;
  if (email.status === 'scheduled') {
    if (!(await releaseSchedule(deps, email))) return null;
    email = { ...email, status: 'queued' };
  }
  const soon = Date.now() + 1000;
  const due = (await pendingRecipients(deps.sql, emailId)).filter(
    (r) => r.next_attempt_at === null || r.next_attempt_at.getTime() <= soon,
  );
  return { email, due };
}

/** A paused org holds its messages (never drops them) and looks again every recheck period. */
async function checkPause(deps: WorkerDeps, email: DeliveryEmail, due: DeliveryRecipient[]): Promise<boolean> {
  if (!email.sending_paused) return false;
  const until = new Date(Date.now() + deps.config.deliveryPauseRecheckSeconds * 1000);
  await holdRecipients(
    deps.sql,
    due.map((r) => r.id),
    'sending paused',
    until,
  );
  await unclaimEmail(deps.sql, email.id);
  return true;
}

async function checkSuppression(ctx: Ctx, email: DeliveryEmail, due: DeliveryRecipient[]) {
  if (email.mode === 'test') return due;
  const fresh = due.filter((r) => r.status === 'queued');
  const suppressed = await findSuppressedEmails(
    ctx.deps.sql,
    email.org_id,
    email.domain_id,
    fresh.map((r) => r.email),
  );
  for (const r of fresh.filter((x) => suppressed.has(x.email.toLowerCase()))) {
    const v: Verdict = { kind: 'rejected', response: 'suppressed', detail: 'Suppressed' };
    await recordVerdict(ctx.deps, email, { id: r.id, email: r.email, attempts: r.attempts, provider: r.provider }, v);
  }
  return due.filter((r) => !suppressed.has(r.email) || r.status !== 'queued');
}

/** Live only: recipients over today's cap wait for the next UTC day (status stays queued). */
async function checkCaps(deps: WorkerDeps, email: DeliveryEmail, due: DeliveryRecipient[]) {
  const now = new Date();
  const domainCap = warmupCap(email.domain_verified_at, now);
  const orgCap = email.daily_cap ?? Infinity;
  const uncounted = due.filter((r) => r.cap_day === null && r.status === 'queued');
  if (email.mode === 'test' || uncounted.length === 0 || (domainCap === Infinity && orgCap === Infinity)) return due;
  const ids = uncounted.map((r) => r.id);
  const allowed = new Set(
    await reserveCap(deps.sql, {
      orgId: email.org_id,
      domainId: email.domain_id,
      day: utcDate(now),
      ids,
      domainCap,
      orgCap,
    }),
  );
  const over = ids.filter((id) => !allowed.has(id));
  const until = nextUtcMidnight(now);
  await holdRecipients(deps.sql, over, `over daily cap until ${until.toISOString()}`, until);
  return due.filter((r) => !over.includes(r.id));
}

/** email.sent for every recipient handed to delivery for the first time. */
async function markHandedOver(deps: WorkerDeps, email: DeliveryEmail, due: DeliveryRecipient[]) {
  const rows = await deps.sql.begin(async (tx) => {
    const changed = new Set(
      await markSent(
        tx,
        due.filter((r) => r.status === 'queued').map((r) => r.id),
      ),
    );
    const events = due
      .filter((r) => changed.has(r.id))
      .map((r) => {
        const provider = r.provider ?? providerOf(r.domain, []).id;
        return eventOf(email, { id: r.id, email: r.email, provider }, 'email.sent', `${r.id}:sent`);
      });
    return await recordEvents(tx, events);
  });
  await publishEvents(
    deps.sql,
    deps.queues,
    rows.map((e) => e.id),
  );
}

async function deliver(ctx: Ctx, email: DeliveryEmail, due: DeliveryRecipient[]): Promise<boolean> {
  const leases = await leaseRecipients(
    ctx.deps.sql,
    due.map((r) => r.id),
    ctx.jobId,
    ATTEMPT_LEASE_SECONDS,
  );
  const byId = new Map(due.map((r) => [r.id, r]));
  const leased: Leased[] = leases.map((l) => ({ ...byId.get(l.id)!, attempts: l.attempts }));
  for (const l of leases.filter((x) => x.resumed)) {
    // The previous attempt of this job died without a result: we cannot know whether the server
    // said 250, so we send again (a possible duplicate rather than a possible loss, RFC 5321 §6.1).
    ctx.deps.logger.warn({ event: 'DELIVERY_ATTEMPT_RESUMED', emailId: email.id, recipientId: l.id }, 'resuming');
  }
  let bounced = false;
  const record = async (r: RecipientRef, v: Verdict) => {
    const events = await recordVerdict(ctx.deps, email, r, v);
    if (events.some((e) => e.type === 'email.bounced' || e.type === 'email.complained')) bounced = true;
  };
  if (email.mode === 'test') {
    for (const r of leased) {
      const provider = r.provider ?? providerOf(r.domain, []).id;
      await record({ id: r.id, email: r.email, attempts: r.attempts, provider }, simulate(r.email, r.attempts));
    }
  } else {
    await deliverLive(ctx, email, leased, record);
  }
  return bounced && email.mode === 'live';
}

export async function processDelivery(ctx: Ctx, job: DeliveryJob): Promise<void> {
  const loaded = await load(ctx.deps, job.emailId);
  if (!loaded) return;
  const { email } = loaded;
  let due = loaded.due;
  if (due.length > 0 && !(await checkPause(ctx.deps, email, due))) {
    if (email.status === 'scheduled' || email.status === 'queued') {
      if (!(await claimEmail(ctx.deps.sql, email.id))) return; // canceled meanwhile
    }
    due = await checkSuppression(ctx, email, due);
    due = await checkCaps(ctx.deps, email, due);
    await markHandedOver(ctx.deps, email, due);
    const bounced = due.length > 0 && (await deliver(ctx, email, due));
    if (bounced) await evaluateAlertRules(ctx.deps, email.org_id, email.alert_rules);
    await unclaimEmail(ctx.deps.sql, email.id);
    await finishEmail(ctx.deps.sql, email.id);
  }
  await scheduleNext(ctx.deps, email.id);
}

export interface DeliveryWorkerOptions {
  worker?: Partial<WorkerOptions>;
  throttle?: ThrottleOptions;
  /** Seconds between sweeps (default DELIVERY_SWEEP_SECONDS); 0 disables the repeatable sweep job. */
  sweepEverySeconds?: number;
  /** How often the sweep's job scheduler is re-asserted (it lives in Redis, which may lose it). */
  rescheduleEveryMs?: number;
}

export async function startDeliveryWorker(deps: WorkerDeps, opts: DeliveryWorkerOptions = {}): Promise<Worker> {
  const outbound = new Outbound(deps.config);
  const throttle = new ProviderThrottle(deps.redis, deps.redisKeys, opts.throttle ?? DEFAULT_THROTTLE);
  const worker = new Worker<DeliveryJob>(
    QUEUE_NAMES.delivery,
    async (job: Job<DeliveryJob>) => {
      if (job.name === SWEEP_JOB) return await startSweeper.sweep(deps, deps.config.deliverySweepGraceSeconds);
      await processDelivery({ deps, outbound, throttle, tracker, jobId: job.id ?? job.data.emailId }, job.data);
    },
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      concurrency: deps.config.deliveryConcurrency,
      ...opts.worker,
    },
  );
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'DELIVERY_JOB_FAILED', jobId: job?.id, err }, 'delivery job failed'),
  );
  worker.on('closed', () => outbound.close());
  const sweepEvery = opts.sweepEverySeconds ?? deps.config.deliverySweepSeconds;
  await startSweeper.schedule(deps, sweepEvery);
  // The repeatable sweep is itself a Redis record: a flush or failover that loses it would stop
  // the safety net until a restart. Upserting it again is idempotent.
  const timer = setInterval(() => {
    startSweeper
      .schedule(deps, sweepEvery)
      .catch((err: unknown) =>
        deps.logger.warn({ event: 'DELIVERY_SWEEP_SCHEDULE_FAILED', err }, 'could not re-assert the delivery sweep'),
      );
  }, opts.rescheduleEveryMs ?? 300_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}
