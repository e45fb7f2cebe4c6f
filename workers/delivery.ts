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
  settleEmails,
  unclaimEmail,
  type DeliveryEmail,
  type DeliveryRecipient,
} from '../shared/db/delivery.js';
import { providerOf } from '../shared/mail/providers.js';
import { deliveryQueue, TAKEOVER_LOCKS, type DeliveryJob, WORKER_RETRY } from '../shared/queues.js';
import type { Stream } from '../shared/streams.js';
import type { WorkerDeps } from './deps.js';
import { evaluateAlertRules } from './delivery/alerts.js';
import { capsApply, checkCaps, sourceAddresses } from './delivery/caps.js';
import { load } from './delivery/load.js';
import { eventOf, outcomeOf, recordVerdict, type RecipientRef } from './delivery/record.js';
import { settleResumed, type Resumable } from './delivery/journal.js';
import { joinProcess, leaveProcess, newBatched, type Batched, type ProcessOptions } from './delivery/process-shared.js';
import { scheduleNext, startSweeper, startSweeps, SWEEP_JOB } from './delivery/schedule.js';
import { ProgressWatchdog, type WatchdogOptions } from './delivery/watchdog.js';
import { OUTAGE_WAIT_MS, retryTransient } from '../shared/transient.js';
import { deliverLive, type LiveContext } from './delivery/send.js';
import * as tracker from '../shared/tracking.js';
import { deliverTest } from './delivery/test-mode.js';
import type { Verdict } from './delivery/verdict.js';
import { logWorkerErrors } from './worker-errors.js';

export { ATTEMPT_LEASE_SECONDS } from './delivery/leases.js';

type Ctx = LiveContext & {
  holder: string;
  batched: Batched;
  /** Tells the watchdog that something moved. */
  progress: () => void;
  /** A hand-over that started at this local time leased attempts to `holder`. */
  leased: (at: number) => void;
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

/** A suppressed recipient's result; its response names the suppression's reason. */
function suppressedVerdict(r: DeliveryRecipient): Verdict {
  const response = r.suppression_reason ? `suppressed (${r.suppression_reason})` : 'suppressed';
  return { kind: 'rejected', response, detail: 'Suppressed' };
}

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
      outcomeOf(
        deps,
        email,
        { id: r.id, email: r.email, attempts: r.attempts, provider: r.provider },
        suppressedVerdict(r),
      ).outcome,
  );
  const startedAt = Date.now();
  const done = await ctx.batched.handOvers.handOver({
    emailId: email.id,
    claim,
    jobId: ctx.holder,
    fresh: fresh.map((r) => r.id),
    sent,
    lease: rest.map((r) => r.id),
    rejected,
  });
  if (!done) return null;
  ctx.leased(startedAt);
  state.final += suppressed.length;
  state.outbox.push(...done.created);
  const byId = new Map(rest.map((r) => [r.id, r]));
  return done.leases.map((l) => ({
    ...byId.get(l.id)!,
    attempts: l.attempts,
    resumed: l.resumed,
    previous: l.previous,
  }));
}

async function deliver(
  ctx: Ctx,
  email: DeliveryEmail,
  leased: Resumable[],
  state: JobState,
  sourceOf: (recipientId: string) => string | null,
) {
  let bounced = false;
  const record = async (r: RecipientRef, v: Verdict) => {
    const events = await recordVerdict(ctx.deps, ctx.batched.recorder, email, r, v, state.outbox);
    ctx.progress();
    if (events.some((e) => e.type === 'email.bounced' || e.type === 'email.complained')) bounced = true;
    if (!events.some((e) => e.type === 'email.delivery_delayed')) state.final++;
  };
  const known = settleResumed(ctx.journal, ctx.deps.logger, email, leased);
  for (const { r, response } of known) {
    await record(
      { id: r.id, email: r.email, attempts: r.attempts, provider: r.provider },
      { kind: 'delivered', response },
    );
  }
  const toSend = leased.filter((l) => !known.some((k) => k.r === l));
  if (toSend.length === 0) return false;
  if (email.mode === 'test') {
    await deliverTest(ctx, email, toSend, record);
  } else {
    await deliverLive(ctx, email, toSend, record, sourceOf);
  }
  return bounced && email.mode === 'live';
}

export async function processDelivery(ctx: Ctx, job: DeliveryJob): Promise<void> {
  const loaded = await load(ctx.deps, ctx.batched.loader, job.emailId);
  if (!loaded) return;
  const { email, pending } = loaded;
  // A re-run after every recipient ended (its last run died before the message's status).
  if (pending.length === 0) {
    await settleEmails(ctx.deps.sql, [email.id]);
    return;
  }
  const state: JobState = { outbox: [], final: 0 };
  try {
    let due = loaded.due;
    if (due.length > 0 && !(await checkPause(ctx.deps, email, due))) {
      let claim = email.status === 'scheduled' || email.status === 'queued';
      let counted = new Map<string, string | null>();
      if (capsApply(email, due, new Date())) {
        // Caps count only what is really sent: claim first, so a canceled message counts nothing.
        if (claim && !(await claimEmail(ctx.deps.sql, email.id))) return;
        claim = false;
        ({ due, counted } = await checkCaps(ctx.deps, email, due));
      }
      const leased = await handOver(ctx, email, due, claim, state);
      if (!leased) return; // canceled meanwhile
      const sourceOf = sourceAddresses(email, counted);
      const bounced = leased.length > 0 && (await deliver(ctx, email, leased, state, sourceOf));
      if (bounced) await evaluateAlertRules(ctx.deps, email.org_id, email.alert_rules);
      // Nothing leased: either no recipient can move any more (all rejected: the message ends)
      // or they wait (held: the message goes back to the API's hands, cancelable again).
      if (leased.length === 0 && (await settleEmails(ctx.deps.sql, [email.id])).length === 0) {
        await unclaimEmail(ctx.deps.sql, email.id);
        await finishEmail(ctx.deps.sql, email.id);
      }
    }
  } finally {
    // Committed events reach the consumers even when a later step failed (else the sweep would).
    await ctx.batched.publisher.publish(state.outbox);
  }
  // Every recipient settled for good: no retry or hold can be due later.
  if (state.final < pending.length) await scheduleNext(ctx.deps, email);
}

export interface DeliveryWorkerOptions extends ProcessOptions {
  worker?: Partial<WorkerOptions>;
  /** Seconds between sweeps (default DELIVERY_SWEEP_SECONDS); 0 disables every sweep (timed and triggered). */
  sweepEverySeconds?: number;
  /** How often the sweep's job scheduler is re-asserted (it lives in Redis, which may lose it). */
  rescheduleEveryMs?: number;
  watchdog?: WatchdogOptions;
}

/**
 * The worker of one stream's delivery queue (`delivery` or `delivery-broadcast`), with batches of
 * its own and the process's shared parts (workers/delivery/process-shared.ts). The transactional
 * worker also runs the delivery sweeps; the broadcast worker's concurrency follows the broadcast
 * share (workers/delivery/broadcast-share.ts).
 */
export async function startStreamWorker(
  deps: WorkerDeps,
  stream: Stream,
  opts: DeliveryWorkerOptions = {},
): Promise<Worker> {
  const concurrency = opts.worker?.concurrency ?? opts.concurrency ?? deps.config.deliveryConcurrency;
  const shared = joinProcess(deps, { ...opts, concurrency });
  const batched = newBatched(deps, shared.marks);
  const watchdog = new ProgressWatchdog(deps.logger, opts.watchdog);
  const queue = deliveryQueue(deps.queues, stream);
  let closing = false;
  const run = async (job: Job<DeliveryJob>) => {
    const holder = shared.leases.hold(job.id ?? job.data.emailId);
    const done = watchdog.started();
    const ctx: Ctx = {
      deps,
      outbound: shared.outbound,
      throttle: shared.throttle,
      tracker,
      journal: shared.journal,
      holder,
      batched,
      progress: () => watchdog.progress(),
      leased: (at) => shared.leases.leased(holder, at),
      holds: () => shared.leases.holds(holder),
      stopping: () => closing,
    };
    try {
      // An outage of Postgres or Redis is waited out (the run starts again from the load, which
      // finds what was already recorded); the job is not failed for it.
      await retryTransient(() => processDelivery(ctx, job.data), {
        maxMs: OUTAGE_WAIT_MS,
        stopped: () => closing,
        onWait: (err) =>
          deps.logger.warn({ event: 'DELIVERY_WAITING_FOR_STORE', jobId: job.id, err }, 'waiting for Postgres/Redis'),
      });
    } finally {
      shared.leases.release(holder);
      done();
    }
  };
  const transactional = stream === 'transactional';
  const worker = new Worker<DeliveryJob>(
    queue.name,
    async (job: Job<DeliveryJob>) => {
      if (job.name === SWEEP_JOB) return await startSweeper.sweep(deps, deps.config.deliverySweepGraceSeconds);
      void queue.taken(job.data).catch(() => undefined);
      if (!transactional) return await run(job);
      shared.share.transactionalStarted();
      try {
        await run(job);
      } finally {
        shared.share.transactionalEnded();
      }
    },
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency,
      // A killed worker's jobs are taken over within seconds (its attempts' leases expire as fast).
      ...TAKEOVER_LOCKS,
      ...opts.worker,
    },
  );
  if (!transactional) shared.share.attach(worker);
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'DELIVERY_JOB_FAILED', jobId: job?.id, stream, err }, 'delivery job failed'),
  );
  // BullMQ reports its own failures (a lost lock, a Redis command that failed) here.
  logWorkerErrors(worker, deps.logger, 'DELIVERY_WORKER_ERROR', { stream });
  worker.on('completed', () => watchdog.progress());
  const stopSweeps = transactional
    ? await startSweeps(deps, {
        everySeconds: opts.sweepEverySeconds ?? deps.config.deliverySweepSeconds,
        rescheduleEveryMs: opts.rescheduleEveryMs ?? 300_000,
      })
    : async () => {};
  worker.on('closing', () => {
    closing = true;
    void stopSweeps();
  });
  worker.on('closed', () => {
    watchdog.close();
    leaveProcess(deps);
  });
  return worker;
}

/** Both streams' delivery workers of one process (what `workers/main` runs by default). */
export interface DeliveryWorkers {
  transactional: Worker;
  broadcast: Worker;
  waitUntilReady(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startDeliveryWorker(
  deps: WorkerDeps,
  opts: DeliveryWorkerOptions = {},
): Promise<DeliveryWorkers> {
  const transactional = await startStreamWorker(deps, 'transactional', opts);
  const broadcast = await startStreamWorker(deps, 'broadcast', opts);
  const both = [transactional, broadcast];
  return {
    transactional,
    broadcast,
    async waitUntilReady() {
      await Promise.all(both.map((w) => w.waitUntilReady()));
    },
    async pause() {
      await Promise.all(both.map((w) => w.pause()));
    },
    async resume() {
      await Promise.all(both.map((w) => w.resume()));
    },
    async close() {
      await Promise.all(both.map((w) => w.close()));
    },
  };
}
