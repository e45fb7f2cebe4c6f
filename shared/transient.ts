// Which failures are an outage of Postgres or Redis (the work waits and is tried again) rather
// than a fault of the work itself (it fails). Decided by error codes, never by a job's data.

/** postgres.js connection codes, socket codes, and SQLSTATEs of a server going away or busy. */
const CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // serialization_failure, deadlock_detected: the statement may simply be run again
  '40001',
  '40P01',
  // read_only_sql_transaction: a write on a standby. With a host list, postgres.js's read-write
  // test (default_transaction_read_only only) takes a standby in recovery for a primary, so
  // between a primary's death and the standby's promotion the pool's sessions sit there; the
  // promotion makes the same sessions writable.
  '25006',
]);

/**
 * ioredis' words for a connection that is down (it throws plain Errors), and Redis's own answer
 * while it reads its data back after a restart (`LOADING`).
 */
const REDIS_DOWN =
  /Connection is closed|Stream isn't writeable|enableOfflineQueue|max retries per request|Command timed out|connect ETIMEDOUT|ECONNREFUSED|ECONNRESET|^LOADING /i;

export function isTransientError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; errno?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  // Class 08: connection exception (SQLSTATE).
  if (CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  return typeof e.message === 'string' && REDIS_DOWN.test(e.message);
}

/**
 * How long a worker's job waits out an outage of Postgres or Redis before it fails as it would
 * have (a sweeper then takes it over).
 */
export const OUTAGE_WAIT_MS = 10 * 60_000;

export interface RetryOptions {
  /** Gives up (throws the last error) after this long; the work then fails as it would have. */
  maxMs: number;
  /** Called once when the first transient failure is met, with that error. */
  onWait?: (err: unknown) => void;
  /** Stops waiting early (the process is shutting down): the last error is thrown. */
  stopped?: () => boolean;
  /** First pause; doubles up to 2 s. */
  firstDelayMs?: number;
}

/**
 * Runs `fn` until it succeeds, waiting out transient failures (an outage of Postgres or Redis)
 * with a short capped back-off; any other error is thrown at once.
 */
export async function retryTransient<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const start = Date.now();
  let delay = opts.firstDelayMs ?? 200;
  let waited = false;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientError(err) || Date.now() - start >= opts.maxMs || opts.stopped?.()) throw err;
      if (!waited) opts.onWait?.(err);
      waited = true;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
}
