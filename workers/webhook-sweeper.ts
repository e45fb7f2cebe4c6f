// The safety net of webhook delivery: Postgres says which deliveries are due; any of those with
// no job in Redis (lost to a Redis flush or failover, or a crash between commit and enqueue) gets
// its job again. Job ids are delivery ids, so a sweep never duplicates a live job.
import { dueDeliveries } from '../shared/db/webhook-deliveries.js';
import { QUEUE_NAMES } from '../shared/queues.js';
import { enqueueDeliveries } from '../shared/webhooks/rules.js';
import type { WorkerDeps } from './deps.js';
import { runEvery } from './periodic.js';

/**
 * Re-enqueues due deliveries (due for more than `graceMs`) that have no job, page after page
 * while pages come back full (a Redis that lost its data may have lost thousands). Returns how many.
 */
export async function sweepDeliveries(deps: WorkerDeps, graceMs = 10_000, limit = 500): Promise<number> {
  let total = 0;
  let after = '';
  for (;;) {
    const page = await sweepPage(deps, graceMs, limit, after);
    total += page.requeued;
    after = page.last;
    if (page.due < limit) return total;
  }
}

async function sweepPage(deps: WorkerDeps, graceMs: number, limit: number, after: string) {
  const queue = deps.queues[QUEUE_NAMES.webhookDelivery];
  const due = await dueDeliveries(deps.sql, graceMs, limit, after);
  // One state look-up per delivery, all sent at once.
  const states = await Promise.all(due.map((d) => queue.getJobState(d.id)));
  const missing: { id: string; webhookId: string }[] = [];
  for (const [i, { id, webhook_id: webhookId }] of due.entries()) {
    const state = states[i]!;
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') continue;
    // A finished job (or a leftover hash in no list) keeps its id: it goes, so that the same id
    // can be added again. Thrown on: a job that stays would make the re-enqueue below a no-op,
    // and the sweep's caller logs WEBHOOK_SWEEP_FAILED; the next sweep tries again.
    await queue.remove(id);
    missing.push({ id, webhookId });
  }
  await enqueueDeliveries(deps.queues, missing);
  if (missing.length > 0) {
    deps.logger.warn({ event: 'WEBHOOK_SWEEP_REQUEUED', count: missing.length }, 'due deliveries had no job');
  }
  return { due: due.length, requeued: missing.length, last: due.at(-1)?.id ?? after };
}

/** Runs the sweep every `intervalMs` until the returned stop function is called. */
export function startDeliverySweeper(deps: WorkerDeps, intervalMs: number): () => void {
  return runEvery(
    intervalMs,
    () => sweepDeliveries(deps),
    (err) => deps.logger.warn({ event: 'WEBHOOK_SWEEP_FAILED', err }, 'webhook sweep failed'),
  );
}
