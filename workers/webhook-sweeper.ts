// The safety net of webhook delivery: Postgres says which deliveries are due; any of those with
// no job in Redis (lost to a Redis flush or failover, or a crash between commit and enqueue) gets
// its job again. Job ids are delivery ids, so a sweep never duplicates a live job.
import { dueDeliveries } from '../shared/db/webhook-deliveries.js';
import { QUEUE_NAMES } from '../shared/queues.js';
import { enqueueDeliveries } from '../shared/webhooks.js';
import type { WorkerDeps } from './deps.js';

/** Re-enqueues due deliveries (due for more than `graceMs`) that have no job. Returns how many. */
export async function sweepDeliveries(deps: WorkerDeps, graceMs = 10_000, limit = 500): Promise<number> {
  const queue = deps.queues[QUEUE_NAMES.webhookDelivery];
  const due = await dueDeliveries(deps.sql, graceMs, limit);
  const missing: { id: string; webhookId: string }[] = [];
  for (const { id, webhook_id: webhookId } of due) {
    const job = await queue.getJob(id);
    if (!job) {
      missing.push({ id, webhookId });
      continue;
    }
    const state = await job.getState();
    if (state === 'completed' || state === 'failed' || state === 'unknown') {
      await job.remove().catch(() => {});
      missing.push({ id, webhookId });
    }
  }
  await enqueueDeliveries(deps.queues, missing);
  if (missing.length > 0) {
    deps.logger.warn({ event: 'WEBHOOK_SWEEP_REQUEUED', count: missing.length }, 'due deliveries had no job');
  }
  return missing.length;
}

/** Runs the sweep every `intervalMs` until the returned stop function is called. */
export function startDeliverySweeper(deps: WorkerDeps, intervalMs: number): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepDeliveries(deps)
      .catch((err: unknown) => deps.logger.warn({ event: 'WEBHOOK_SWEEP_FAILED', err }, 'webhook sweep failed'))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
