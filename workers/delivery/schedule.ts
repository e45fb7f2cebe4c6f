// Jobs of the delivery queue besides the API's first one: the next retry or hold of a message
// (job id `<email id>-<due ms>`, so scheduling the same moment twice adds one job), and the
// repeatable sweep that re-enqueues messages whose job was lost (never deleting anything).
import { findStuckEmails } from '../../shared/db/delivery-sweep.js';
import { nextDue } from '../../shared/db/delivery.js';
import type { Queues } from '../../shared/queues.js';
import type { WorkerDeps } from '../deps.js';

export const SWEEP_JOB = 'sweep';
const SWEEP_SCHEDULER = 'delivery-sweep';
const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

export async function scheduleNext(deps: WorkerDeps, emailId: string): Promise<void> {
  const due = await nextDue(deps.sql, emailId);
  if (!due) return;
  await deps.queues.delivery.add(
    'email',
    { emailId },
    { jobId: `${emailId}-${due.getTime()}`, delay: Math.max(0, due.getTime() - Date.now()) },
  );
}

/** Whether the job that should move this message (the API's, or its retry/hold job) still waits or runs. */
async function hasLiveJob(queue: Queues['delivery'], emailId: string, due: Date | null): Promise<boolean> {
  for (const id of [emailId, ...(due ? [`${emailId}-${due.getTime()}`] : [])]) {
    const job = await queue.getJob(id);
    if (job && LIVE_STATES.has(await job.getState())) return true;
  }
  return false;
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

  /** Re-enqueues stuck messages that have no live job; returns how many. Never deletes anything. */
  async sweep(deps: WorkerDeps, graceSeconds: number, leaseSeconds = 15 * 60): Promise<number> {
    const stuck = await findStuckEmails(deps.sql, graceSeconds, leaseSeconds);
    const lost: string[] = [];
    for (const s of stuck) {
      if (!(await hasLiveJob(deps.queues.delivery, s.id, s.due))) lost.push(s.id);
    }
    if (lost.length === 0) return 0;
    const stamp = Date.now();
    await deps.queues.delivery.addBulk(
      lost.map((emailId) => ({ name: 'email', data: { emailId }, opts: { jobId: `${emailId}-sweep-${stamp}` } })),
    );
    deps.logger.warn(
      { event: 'DELIVERY_SWEEP_REQUEUED', count: lost.length, emailIds: lost },
      're-enqueued stuck messages',
    );
    return lost.length;
  },
};
