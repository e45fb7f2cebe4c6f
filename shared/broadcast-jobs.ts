// Jobs of the `broadcast` queue, shared by the API (the first batch of a send) and the worker
// (each next batch, and the sweeper). The job id names the broadcast and the cursor the batch
// starts after, so adding the same batch twice adds one job; a job whose cursor is no longer the
// broadcast's is stale and does nothing, so a duplicate never repeats a batch.
import type { Queues } from './queues.js';

export function batchJobId(broadcastId: string, after: string | null): string {
  return `${broadcastId}-${after ?? 'start'}`;
}

export async function enqueueBatch(
  queues: Pick<Queues, 'broadcast'>,
  broadcastId: string,
  after: string | null,
  opts: { delayMs?: number; jobId?: string } = {},
): Promise<void> {
  await queues.broadcast.add(
    'batch',
    { broadcastId, after },
    { jobId: opts.jobId ?? batchJobId(broadcastId, after), delay: Math.max(0, opts.delayMs ?? 0) },
  );
}
