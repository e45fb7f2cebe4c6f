// The delivery queue: one job per message (or per retry of its pending recipients). The handler
// is a list of named steps: load → checkPause → (checkCaps) → handOver (claim, suppression,
// email.sent, lease: one transaction) → deliver (render, DKIM, VERP, SMTP; or the test-mode
// simulation; one statement per result) → publish. Load, hand-over, results and publication are
// batched across the jobs running at once (one statement for many jobs; each job waits for its
// own batch to commit, so the order of the steps and their guarantees are those of one job). Each recipient's attempt is recorded before
// SMTP (attempts + 1, in-flight marker) and its result after, so a job re-run after a 250 never
// sends again. A repeatable `sweep` job re-enqueues stuck messages.
import { Worker, type Job, type WorkerOptions } from 'bullmq';
import {
  claimEmail,
  finishEmail,
  holdRecipients,
  reserveCap,
  unclaimEmail,
  type DeliveryEmail,
  type DeliveryRecipient,
} from '../shared/db/delivery.js';
import { EventPublisher, PublishedMarks } from '../shared/events.js';
import { Outbound } from '../shared/mail/outbound/index.js';
import { providerOf } from '../shared/mail/providers.js';
import { QUEUE_NAMES, type DeliveryJob } from '../shared/queues.js';
import type { WorkerDeps } from './deps.js';
import { evaluateAlertRules } from './delivery/alerts.js';
import { nextUtcMidnight, utcDate, warmupCap } from './delivery/caps.js';
import { HandOvers } from './delivery/handover.js';
import { DeliveryLoader, load } from './delivery/load.js';
import { eventOf, OutcomeRecorder, outcomeOf, recordVerdict, type RecipientRef } from './delivery/record.js';
import { scheduleNext, startSweeper, SWEEP_JOB } from './delivery/schedule.js';
import { deliverLive, type Leased, type LiveContext } from './delivery/send.js';
import { DEFAULT_THROTTLE, ProviderThrottle, type ThrottleOptions } from './delivery/throttle.js';
import * as tracker from '../shared/tracking.js';
import { simulate, type Verdict } from './delivery/verdict.js';

export { ATTEMPT_LEASE_SECONDS } from './delivery/handover.js';

/**
 * The steps whose statements are shared by the worker's concurrent jobs (one statement or Redis
 * round trip for a batch of jobs; each job still waits for its own writes to commit).
 */
interface Batched {
  loader: DeliveryLoader;
  handOvers: HandOvers;
  recorder: OutcomeRecorder;
  publisher: EventPublisher;
}

type Ctx = LiveContext & {
  jobId: string;
  batched: Batched;
};

/** What one job learned while it ran: events to publish, recipients settled for good. */
interface JobState {
  outbox: string[];
  final: number;
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

function capsApply(email: DeliveryEmail, due: DeliveryRecipient[], now: Date): boolean {
  if (email.mode === 'test') return false;
  if (warmupCap(email.domain_verified_at, now) === Infinity && email.daily_cap === null) return false;
  return due.some((r) => r.cap_day === null && r.status === 'queued' && !r.suppressed);
}

/** Live only: recipients over today's cap wait for the next UTC day (status stays queued). */
async function checkCaps(deps: WorkerDeps, email: DeliveryEmail, due: DeliveryRecipient[]) {
  const now = new Date();
  const uncounted = due.filter((r) => r.cap_day === null && r.status === 'queued' && !r.suppressed);
  const ids = uncounted.map((r) => r.id);
  const allowed = new Set(
    await reserveCap(deps.sql, {
      orgId: email.org_id,
      domainId: email.domain_id,
      day: utcDate(now),
      ids,
      domainCap: warmupCap(email.domain_verified_at, now),
      orgCap: email.daily_cap ?? Infinity,
    }),
  );
  const over = ids.filter((id) => !allowed.has(id));
  const until = nextUtcMidnight(now);
  await holdRecipients(deps.sql, over, `over daily cap until ${until.toISOString()}`, until);
  return due.filter((r) => !over.includes(r.id));
}

const SUPPRESSED: Verdict = { kind: 'rejected', response: 'suppressed', detail: 'Suppressed' };

/**
 * Everything before SMTP, in one transaction shared with other jobs' hand-overs (workers/delivery/
 * handover.ts): claim, suppressed recipients rejected, email.sent, the attempt lease and the
 * message 'sent' once leased. Null when the message was canceled meanwhile.
 */
async function handOver(ctx: Ctx, email: DeliveryEmail, due: DeliveryRecipient[], claim: boolean, state: JobState) {
  const { deps } = ctx;
  const isSuppressed = (r: DeliveryRecipient) => email.mode === 'live' && r.status === 'queued' && r.suppressed;
  const suppressed = due.filter(isSuppressed);
  const rest = due.filter((r) => !isSuppressed(r));
  const fresh = rest.filter((r) => r.status === 'queued');
  // A recipient another job already marked sent has its email.sent (same dedupe key): skipped.
  const sent = fresh.map((r) => {
    const provider = r.provider ?? providerOf(r.domain, []).id;
    return eventOf(email, { id: r.id, email: r.email, provider }, 'email.sent', `${r.id}:sent`);
  });
  const rejected = suppressed.map(
    (r) =>
      outcomeOf(deps, email, { id: r.id, email: r.email, attempts: r.attempts, provider: r.provider }, SUPPRESSED)
        .outcome,
  );
  const done = await ctx.batched.handOvers.handOver({
    emailId: email.id,
    claim,
    jobId: ctx.jobId,
    fresh: fresh.map((r) => r.id),
    sent,
    lease: rest.map((r) => r.id),
    rejected,
  });
  if (!done) return null;
  state.final += suppressed.length;
  state.outbox.push(...done.created);
  const byId = new Map(rest.map((r) => [r.id, r]));
  return done.leases.map((l) => ({ ...byId.get(l.id)!, attempts: l.attempts, resumed: l.resumed }));
}

async function deliver(ctx: Ctx, email: DeliveryEmail, leased: (Leased & { resumed: boolean })[], state: JobState) {
  for (const l of leased.filter((x) => x.resumed)) {
    // The previous attempt of this job died without a result: we cannot know whether the server
    // said 250, so we send again (a possible duplicate rather than a possible loss, RFC 5321 §6.1).
    ctx.deps.logger.warn({ event: 'DELIVERY_ATTEMPT_RESUMED', emailId: email.id, recipientId: l.id }, 'resuming');
  }
  let bounced = false;
  const record = async (r: RecipientRef, v: Verdict) => {
    const events = await recordVerdict(ctx.deps, ctx.batched.recorder, email, r, v, state.outbox);
    if (events.some((e) => e.type === 'email.bounced' || e.type === 'email.complained')) bounced = true;
    if (!events.some((e) => e.type === 'email.delivery_delayed')) state.final++;
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
  const loaded = await load(ctx.deps, ctx.batched.loader, job.emailId);
  if (!loaded) return;
  const { email, pending } = loaded;
  const state: JobState = { outbox: [], final: 0 };
  try {
    let due = loaded.due;
    if (due.length > 0 && !(await checkPause(ctx.deps, email, due))) {
      let claim = email.status === 'scheduled' || email.status === 'queued';
      if (capsApply(email, due, new Date())) {
        // Caps count only what is really sent: claim first, so a canceled message counts nothing.
        if (claim && !(await claimEmail(ctx.deps.sql, email.id))) return;
        claim = false;
        due = await checkCaps(ctx.deps, email, due);
      }
      const leased = await handOver(ctx, email, due, claim, state);
      if (!leased) return; // canceled meanwhile
      const bounced = leased.length > 0 && (await deliver(ctx, email, leased, state));
      if (bounced) await evaluateAlertRules(ctx.deps, email.org_id, email.alert_rules);
      if (leased.length === 0) {
        await unclaimEmail(ctx.deps.sql, email.id);
        await finishEmail(ctx.deps.sql, email.id);
      }
    }
  } finally {
    // Committed events reach the consumers even when a later step failed (else the sweep would).
    await ctx.batched.publisher.publish(state.outbox);
  }
  // Every recipient settled for good: no retry or hold can be due later.
  if (state.final < pending.length) await scheduleNext(ctx.deps, email.id);
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
  const marks = new PublishedMarks(deps.sql, (err) =>
    deps.logger.warn({ event: 'EVENTS_MARK_FAILED', err }, 'marking events published failed; they will be republished'),
  );
  const batched: Batched = {
    loader: new DeliveryLoader(deps.sql),
    handOvers: new HandOvers(deps.sql),
    recorder: new OutcomeRecorder(deps.sql),
    publisher: new EventPublisher(deps.sql, deps.queues, marks),
  };
  const worker = new Worker<DeliveryJob>(
    QUEUE_NAMES.delivery,
    async (job: Job<DeliveryJob>) => {
      if (job.name === SWEEP_JOB) return await startSweeper.sweep(deps, deps.config.deliverySweepGraceSeconds);
      await processDelivery(
        { deps, outbound, throttle, tracker, jobId: job.id ?? job.data.emailId, batched },
        job.data,
      );
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
  worker.on('closed', () => {
    outbound.close();
    void marks.flush();
  });
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
