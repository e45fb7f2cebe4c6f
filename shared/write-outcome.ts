// Writes whose outcome an answer must state truthfully: a sending route may answer "not stored"
// (503) only when nothing was stored, since a client retries such an answer and would otherwise
// send the message twice. When the connection to Postgres breaks while a statement is on its way,
// the statement may have been applied (the server committed, then the answer was lost) or not;
// running the same idempotent write again on a new connection settles it: it either stores the
// rows or finds them stored. Only when Postgres stays out of reach for the whole confirmation
// window is the outcome left unknown (OutcomeUnknownError), which the caller reports as such.
import { isTransientError, retryTransient } from './transient.js';

/**
 * Failures raised before a statement could reach the server: no connection was made (refused,
 * timed out, no route, no name) or the server turned the connection away at start-up (starting
 * up or shutting down, too many connections). Nothing was written.
 */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P03',
  '53300',
]);

export function neverSent(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NEVER_SENT.has(code)) return true;
  return err instanceof AggregateError && err.errors.length > 0 && err.errors.every(neverSent);
}

/** The write may or may not have been applied, and Postgres could not be asked in time. */
export class OutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super('the outcome of a write is unknown: the connection to Postgres broke and it stayed unreachable', { cause });
    this.name = 'OutcomeUnknownError';
  }
}

export interface ConfirmOptions {
  /** How long to keep trying to settle an uncertain outcome. */
  confirmMs: number;
  /** Called once, when the first attempt's outcome is uncertain. */
  onUncertain?: (err: unknown) => void;
  /** Stops trying early (the process is shutting down). */
  stopped?: () => boolean;
}

/**
 * Runs `write`, which must be idempotent (a second run after a first that was applied changes
 * nothing and succeeds). Its result when an attempt answers; the error itself when it proves
 * nothing was written (a statement refused by the server, a connection never made); otherwise
 * the write is run again until it answers or `confirmMs` passes, then OutcomeUnknownError.
 * `again` replaces `write` for the runs after an uncertain one, when telling "applied by the
 * first run" from "not applicable" needs another statement (see POST /broadcasts/{id}/send).
 */
export async function writeConfirmed<T>(
  write: () => Promise<T>,
  opts: ConfirmOptions,
  again: () => Promise<T> = write,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!isTransientError(err) || neverSent(err)) throw err;
    opts.onUncertain?.(err);
  }
  try {
    return await retryTransient(again, {
      maxMs: opts.confirmMs,
      firstDelayMs: 100,
      ...(opts.stopped ? { stopped: opts.stopped } : {}),
    });
  } catch (err) {
    // A failure of the re-run does not say what the first run did.
    throw new OutcomeUnknownError(err);
  }
}
