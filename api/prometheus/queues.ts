// The state of every BullMQ queue, read at scrape time (GET /metrics) and by GET /healthz?verbose=1:
// jobs per state, how long the oldest ready job has waited, and the worker connections.
import type { Job } from 'bullmq';
import { QUEUE_NAMES, type QueueName, type Queues } from '../../shared/queues.js';

export interface QueueState {
  queue: QueueName;
  /** Jobs per state: waiting, active, delayed, prioritized, waiting-children, completed, failed. */
  counts: Record<string, number>;
  /**
   * Seconds the oldest job among those workers take next has been ready (0 when none waits): the
   * head of the wait list and the first prioritized jobs (a whole prioritized set is not read).
   */
  oldestWaitingSeconds: number;
  /** Worker connections consuming the queue; null when Redis will not list its clients. */
  workers: number | null;
}

/**
 * Since when a waiting job has been ready to run: its creation, or the start of its last run when
 * it ran before (a retry or a stalled job), plus the delay it was given.
 */
export function readySince(job: Pick<Job, 'timestamp' | 'processedOn' | 'delay'>): number {
  return Math.max(job.timestamp, job.processedOn ?? 0) + (job.delay ?? 0);
}

async function workerCount(queue: Queues[QueueName]): Promise<number | null> {
  const clients = await queue.getWorkers();
  // BullMQ answers with one placeholder entry where CLIENT LIST is refused (managed Redis).
  if (clients.length === 1 && !clients[0]!.addr && /not support/.test(clients[0]!.name ?? '')) return null;
  return clients.length;
}

/** Prioritized jobs whose age is looked at: the ones workers take next. */
const PRIORITIZED_LOOKED_AT = 20;

async function queueState(queue: Queues[QueueName], name: QueueName, now: number): Promise<QueueState> {
  const [counts, head, next, workers] = await Promise.all([
    queue.getJobCounts(),
    // Ascending: the job at the head of the wait list, the next one a worker takes.
    queue.getWaiting(0, 0),
    // The delivery queue orders its jobs by priority (stream, then each organization's backlog):
    // the jobs workers take next, whose wait is the queue's lag. Other queues have none.
    queue.getPrioritized(0, PRIORITIZED_LOOKED_AT - 1),
    workerCount(queue),
  ]);
  const ages = [...head, ...next].filter(Boolean).map((job) => Math.max(0, now - readySince(job)) / 1000);
  const oldestWaitingSeconds = ages.length ? Math.max(...ages) : 0;
  return { queue: name, counts, oldestWaitingSeconds, workers };
}

/** Every queue of QUEUE_NAMES, read concurrently (a few Redis commands each). */
export async function queueStates(queues: Queues): Promise<QueueState[]> {
  const now = Date.now();
  return await Promise.all(Object.values(QUEUE_NAMES).map((name) => queueState(queues[name], name, now)));
}

/** `p`, or a rejection after `ms`: a scrape or a health report never hangs on one dependency. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}
