// Jobs of the delivery queue besides the API's first one: the next retry or hold of a message
// (job id `<email id>-<due ms>`, so scheduling the same moment twice adds one job), and the
// sweep that re-enqueues messages whose job was lost (never deleting anything) and settles
// messages none of whose recipients can move any more.
import { findSettledEmails, findStuckEmails } from '../../shared/db/delivery-sweep.js';
import { nextDue, settleEmails } from '../../shared/db/delivery.js';
import { deliveryQueue, enqueueMail, type Queues } from '../../shared/queues.js';
import type { Stream } from '../../shared/streams.js';
import type { WorkerDeps } from '../deps.js';
import { SweepTrigger } from './sweep-trigger.js';

export const SWEEP_JOB = 'sweep';
const SWEEP_SCHEDULER = 'delivery-sweep';
const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);
const PAGE = 500;

export async function scheduleNext(deps: WorkerDeps, email: { id: string; org_id: string; stream: Stream }) {
  const due = await nextDue(deps.sql, email.id);
  if (!due) return;
  await enqueueMail(deps.queues, [
    {
      emailId: email.id,
      orgId: email.org_id,
      stream: email.stream,
      jobId: `${email.id}-${due.getTime()}`,
      delay: Math.max(0, due.getTime() - Date.now()),
    },
  ]);
}

/**
 * Which of the given job ids still wait or run. One state look-up per id, all sent at once (a
 * page of 500 messages costs one burst of round trips, not 1,500 in turn).
 */
async function liveJobs(queues: Queues, jobs: { id: string; stream: Stream }[]): Promise<Set<string>> {
  const states = await Promise.all(jobs.map((j) => deliveryQueue(queues, j.stream).getJobState(j.id)));
  return new Set(jobs.filter((_, i) => LIVE_STATES.has(states[i]!)).map((j) => j.id));
}

/** The sweep job each message last got from this process (its id carries a time stamp). */
const swept = new Map<string, string>();

/** Re-enqueues one page of stuck messages that have no live job; returns the page's size and how many. */
async function sweepPage(deps: WorkerDeps, graceSeconds: number, after: string) {
  const stuck = await findStuckEmails(deps.sql, graceSeconds, after, PAGE);
  // The API's job (id = email id), its retry/hold job, and the sweep job this process added.
  const jobsOf = new Map(
    stuck.map((s) => [
      s.id,
      [s.id, ...(s.due ? [`${s.id}-${s.due.getTime()}`] : []), ...(swept.has(s.id) ? [swept.get(s.id)!] : [])],
    ]),
  );
  const live = await liveJobs(
    deps.queues,
    stuck.flatMap((s) => jobsOf.get(s.id)!.map((id) => ({ id, stream: s.stream }))),
  );
  const lost = stuck.filter((s) => !jobsOf.get(s.id)!.some((id) => live.has(id)));
  if (lost.length > 0) {
    const stamp = Date.now();
    // Re-enqueued with their stream and fair priority, as the API would have queued them.
    const jobs = lost.map((s) => ({
      emailId: s.id,
      orgId: s.org_id,
      stream: s.stream,
      jobId: `${s.id}-sweep-${stamp}`,
    }));
    await enqueueMail(deps.queues, jobs);
    for (const j of jobs) swept.set(j.emailId, j.jobId);
    deps.logger.warn(
      { event: 'DELIVERY_SWEEP_REQUEUED', count: lost.length, emailIds: lost.map((s) => s.id) },
      're-enqueued stuck messages',
    );
  }
  return { size: stuck.length, last: stuck.at(-1)?.id ?? after, requeued: lost.length };
}

/** Settles messages left queued/processing whose recipients all ended; returns how many. */
async function settleLeftovers(deps: WorkerDeps, graceSeconds: number): Promise<number> {
  let total = 0;
  for (;;) {
    const ids = await findSettledEmails(deps.sql, graceSeconds, PAGE);
    const settled = await settleEmails(deps.sql, ids);
    total += settled.length;
    if (settled.length > 0) {
      deps.logger.warn(
        { event: 'DELIVERY_SWEEP_SETTLED', count: settled.length, emailIds: settled },
        'settled messages',
      );
    }
    if (ids.length < PAGE || settled.length === 0) return total;
  }
}

export const startSweeper = {
  async schedule(deps: WorkerDeps, everySeconds: number): Promise<void> {
    if (everySeconds <= 0) return;
    await deps.queues.delivery.upsertJobScheduler(
      SWEEP_SCHEDULER,
      { every: Math.round(everySeconds * 1000) },
      { name: SWEEP_JOB, data: { emailId: '' } },
    );
  },

  /**
   * Re-enqueues every stuck message that has no live job, page after page until none is left
   * (a Redis that lost its data may have lost thousands), and settles messages whose
   * recipients all ended. Returns how many were re-enqueued. Never deletes anything.
   */
  async sweep(deps: WorkerDeps, graceSeconds: number): Promise<number> {
    await settleLeftovers(deps, graceSeconds);
    // Fairness counts left high by jobs removed unseen (a cancel) start again from an empty queue.
    await deps.queues.delivery.resetCountsIfIdle();
    await deps.queues['delivery-broadcast'].resetCountsIfIdle();
    let after = '';
    let total = 0;
    for (;;) {
      const page = await sweepPage(deps, graceSeconds, after);
      total += page.requeued;
      after = page.last;
      if (page.size < PAGE) break;
    }
    if (swept.size > 100_000) swept.clear();
    await deps.redis.set(
      deps.redisKeys.deliverySweepLast,
      JSON.stringify({ finished_at: new Date().toISOString(), requeued: total }),
    );
    return total;
  },
};

/** Grace of a triggered sweep: Redis just lost jobs, so a due message has none to wait for. */
const TRIGGERED_GRACE_SECONDS = 5;

/**
 * Starts the sweeps of one delivery worker: the repeatable sweep job (re-asserted every
 * `rescheduleEveryMs`, since it is a Redis record a flush loses) and the triggered sweeps
 * (workers/delivery/sweep-trigger.ts). `everySeconds` 0 starts none. Returns the stop function.
 */
export async function startSweeps(
  deps: WorkerDeps,
  o: { everySeconds: number; rescheduleEveryMs: number },
): Promise<() => Promise<void>> {
  if (o.everySeconds <= 0) return async () => {};
  await startSweeper.schedule(deps, o.everySeconds);
  const reassert = () =>
    startSweeper
      .schedule(deps, o.everySeconds)
      .catch((err: unknown) =>
        deps.logger.warn({ event: 'DELIVERY_SWEEP_SCHEDULE_FAILED', err }, 'could not re-assert the delivery sweep'),
      );
  const timer = setInterval(() => void reassert(), o.rescheduleEveryMs).unref();
  const grace = Math.min(TRIGGERED_GRACE_SECONDS, deps.config.deliverySweepGraceSeconds);
  const trigger = new SweepTrigger(
    deps,
    async (why) => {
      try {
        await reassert();
        const n = await startSweeper.sweep(deps, grace);
        deps.logger.info({ event: 'DELIVERY_SWEEP_TRIGGERED', why, requeued: n }, 'swept at once');
      } catch (err) {
        deps.logger.warn({ event: 'DELIVERY_SWEEP_FAILED', err, why }, 'delivery sweep failed');
      }
    },
    (grace + 1) * 1000,
    { sentinel: deps.redisKeys.deliverySentinel },
  );
  return async () => {
    clearInterval(timer);
    await trigger.close();
  };
}
