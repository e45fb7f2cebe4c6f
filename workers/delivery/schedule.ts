// Jobs of the delivery queue besides the API's first one: the next retry or hold of a message
// (job id `<email id>-<due ms>`, so scheduling the same moment twice adds one job), and the
// repeatable sweep that re-enqueues messages whose job was lost (never deleting anything).
import { findStuckEmails } from '../../shared/db/delivery-sweep.js';
import { nextDue } from '../../shared/db/delivery.js';
import type { WorkerDeps } from '../deps.js';

export const SWEEP_JOB = 'sweep';
const SWEEP_SCHEDULER = 'delivery-sweep';
/** A recipient due this long ago with no attempt in flight is considered to have lost its job. */
export const SWEEP_GRACE_SECONDS = 120;

export async function scheduleNext(deps: WorkerDeps, emailId: string): Promise<void> {
  const due = await nextDue(deps.sql, emailId);
  if (!due) return;
  await deps.queues.delivery.add(
    'email',
    { emailId },
    { jobId: `${emailId}-${due.getTime()}`, delay: Math.max(0, due.getTime() - Date.now()) },
  );
}

export const startSweeper = {
  async schedule(deps: WorkerDeps, everySeconds: number): Promise<void> {
    if (everySeconds <= 0) return;
    await deps.queues.delivery.upsertJobScheduler(
      SWEEP_SCHEDULER,
      { every: everySeconds * 1000 },
      { name: SWEEP_JOB, data: { emailId: '' } },
    );
  },

  /** Re-enqueues stuck messages; returns how many. Safe to run while their jobs are alive. */
  async sweep(deps: WorkerDeps, graceSeconds = SWEEP_GRACE_SECONDS, leaseSeconds = 15 * 60): Promise<number> {
    const ids = await findStuckEmails(deps.sql, graceSeconds, leaseSeconds);
    if (ids.length === 0) return 0;
    const stamp = Date.now();
    await deps.queues.delivery.addBulk(
      ids.map((emailId) => ({ name: 'email', data: { emailId }, opts: { jobId: `${emailId}-sweep-${stamp}` } })),
    );
    deps.logger.warn({ event: 'DELIVERY_SWEEP_REQUEUED', count: ids.length }, 're-enqueued stuck messages');
    return ids.length;
  },
};
