// The 'error' listener of every BullMQ worker. BullMQ reports its own failures there (a Redis
// command that failed, a lock it could not renew); without a listener the event would throw out
// of the emitter and stop the worker. While Redis is away every poll fails, which made each worker
// log about 150 error lines in a 5 s outage: the first error of a run is logged, then at most one
// line every 30 s per worker, which says how many errors it did not log.
import type { Logger } from '../shared/logger.js';

export const WORKER_ERROR_EVERY_MS = 30_000;

interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export function logWorkerErrors(
  worker: Emitter,
  logger: Logger,
  event: string,
  fields: Record<string, unknown> = {},
  everyMs = WORKER_ERROR_EVERY_MS,
): void {
  let last = -Infinity;
  let unlogged = 0;
  worker.on('error', (err) => {
    const now = Date.now();
    if (now - last < everyMs) {
      unlogged++;
      return;
    }
    const extra = unlogged > 0 ? { unlogged } : {};
    logger.error(
      { event, err, ...fields, ...extra },
      unlogged > 0 ? `worker error (${unlogged} more since the last line were not logged)` : 'worker error',
    );
    last = now;
    unlogged = 0;
  });
}
