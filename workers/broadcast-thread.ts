// The consumers of a worker process, and the broadcast stream on a thread of its own. A worker process that delivers both streams runs
// the broadcast stream's consumers (delivery-broadcast, and broadcast: the batches that store a
// broadcast's messages) on a worker thread (workers/stream-thread.ts), so that a password reset
// is never delivered on an event loop busy with a newsletter: each stream has an event loop, a
// Postgres pool and Redis connections of its own, and the process uses a second core. The main
// thread passes the broadcast share on (BROADCAST_MAX_SHARE holds while it delivers
// transactional mail). A thread that ends unexpectedly is logged and started again a second later.
import type { Worker } from 'node:worker_threads';
import { newThread } from '../shared/thread.js';
import { QUEUE_NAMES } from '../shared/queues.js';
import type { Logger } from '../shared/logger.js';
import type { BroadcastShare } from './delivery/broadcast-share.js';
import type { Worker as BullWorker } from 'bullmq';
import type { WorkerDeps } from './deps.js';
import { processOf } from './delivery/process-shared.js';
import { registry } from './registry.js';
import type { FromThread, ToThread } from './stream-thread.js';

/** The queues a broadcast thread takes, when the process consumes them. */
export const BROADCAST_THREAD_QUEUES: string[] = [QUEUE_NAMES.deliveryBroadcast, QUEUE_NAMES.broadcast];

/** Which of `wanted` run on the broadcast thread: none unless the process delivers both streams. */
export function threadQueues(wanted: string[]): string[] {
  if (!wanted.includes(QUEUE_NAMES.delivery) || !wanted.includes(QUEUE_NAMES.deliveryBroadcast)) return [];
  return wanted.filter((q) => BROADCAST_THREAD_QUEUES.includes(q));
}

/** A thread that ended is started again after 1 s, then 2, 4 … up to a minute while it keeps ending. */
const RESTART_MS = 1000;
const MAX_RESTART_MS = 60_000;
/** A thread that ran this long before it ended counts as healthy: the next start waits 1 s again. */
const HEALTHY_MS = 5 * 60_000;

/**
 * Postgres connections of the two threads: DATABASE_POOL_MAX stays the process's whole budget,
 * split between them (one each at least).
 */
export function poolSizes(max: number): { main: number; thread: number } {
  const thread = Math.max(1, Math.floor(max / 2));
  return { main: Math.max(1, max - thread), thread };
}
/** A new thread running workers/stream-thread. */
function newStreamThread(queues: string[], poolMax: number): Worker {
  return newThread(import.meta.url, 'stream-thread', { workerData: { queues, poolMax } });
}

export interface BroadcastThread {
  close(): Promise<void>;
}

/**
 * Starts the thread with `queues`; resolves once its consumers are connected. `share` is the main
 * thread's broadcast share, whose state the thread follows; `threadPoolMax` its Postgres pool.
 */
export async function startBroadcastThread(
  queues: string[],
  logger: Logger,
  share: BroadcastShare | null,
  threadPoolMax: number,
): Promise<BroadcastThread> {
  let closing = false;
  let current: Worker;
  let restart: NodeJS.Timeout | null = null;
  const post = (m: ToThread) => current.postMessage(m);
  share?.onChange((limited) => post({ type: 'share', limited }));

  /** Ends of the thread in a row (reset once one ran HEALTHY_MS): the next start waits longer. */
  let failures = 0;
  const again = () => {
    failures++;
    const delay = Math.min(MAX_RESTART_MS, RESTART_MS * 2 ** (failures - 1));
    restart = setTimeout(() => {
      restart = null;
      if (!closing) void spawn(false).catch(() => undefined);
    }, delay);
  };

  const spawn = (first: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const w = newStreamThread(queues, threadPoolMax);
      current = w;
      let readyAt: number | null = null;
      w.on('message', (m: FromThread) => {
        if (m.type === 'closed') {
          // Whatever still holds its event loop, the thread is done.
          void w.terminate();
          return;
        }
        readyAt = Date.now();
        if (share?.limited) post({ type: 'share', limited: true });
        resolve();
      });
      w.on('error', (err) => {
        logger.error({ event: 'WORKER_THREAD_FAILED', queues, err }, 'broadcast thread failed');
      });
      w.on('exit', (code) => {
        if (closing) return;
        // A first start that fails is the caller's to report; later ends are started again.
        if (first && readyAt === null) {
          reject(new Error(`the broadcast thread ended (exit code ${code}) before it was ready`));
          return;
        }
        if (readyAt !== null && Date.now() - readyAt >= HEALTHY_MS) failures = 0;
        logger.error(
          { event: 'WORKER_THREAD_EXITED', queues, code, failures: failures + 1 },
          'broadcast thread ended; starting it again',
        );
        again();
        resolve();
      });
    });

  await spawn(true);
  logger.info({ queues }, 'broadcast stream on a thread of its own');
  return {
    async close() {
      closing = true;
      if (restart) clearTimeout(restart);
      const w = current;
      if (w.threadId === -1) return;
      const ended = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      post({ type: 'close' });
      await ended;
    },
  };
}

/**
 * Starts the consumers of `wanted` the way the worker process runs them: the broadcast stream's on
 * a thread of their own when the process delivers both streams, the rest here. `close` stops them
 * all (each finishing the jobs it holds).
 */
export async function startConsumers(
  deps: WorkerDeps,
  wanted: string[],
  logger: Logger,
  threadPoolMax = poolSizes(deps.config.databasePoolMax).thread,
): Promise<{ close(): Promise<void> }> {
  const onThread = threadQueues(wanted);
  const workers: BullWorker[] = [];
  for (const consumer of registry.filter((c) => wanted.includes(c.queue) && !onThread.includes(c.queue))) {
    workers.push(await consumer.start(deps));
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const share = processOf(deps)?.share ?? null;
  const thread = onThread.length > 0 ? await startBroadcastThread(onThread, logger, share, threadPoolMax) : null;
  return {
    async close() {
      await Promise.all([...workers.map((w) => w.close()), thread?.close()]);
    },
  };
}
