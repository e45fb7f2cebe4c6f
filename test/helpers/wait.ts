// The one way a test waits for something that happens on its own time (a worker, another process,
// pub/sub): poll a probe with a generous deadline, never sleep a fixed time. Test files run in
// parallel on a loaded machine, so deadlines are long; a probe that answers early returns early.
import { inspect } from 'node:util';

export interface WaitOptions {
  /** How long to keep polling before failing (default 20 s). */
  timeoutMs?: number;
  /** Pause between probes (default 50 ms). */
  intervalMs?: number;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_INTERVAL_MS = 50;

/**
 * Polls `probe` until it returns a truthy value and returns that value. After the deadline it
 * throws, naming `what` it waited for and the probe's last answer.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  opts: WaitOptions | number = {},
): Promise<Truthy<T>> {
  const { timeoutMs = DEFAULT_TIMEOUT_MS, intervalMs = DEFAULT_INTERVAL_MS } =
    typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v as Truthy<T>;
    if (Date.now() > deadline) {
      const last = inspect(v, { depth: 3, breakLength: Infinity, maxStringLength: 500 });
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`);
    }
    await sleep(intervalMs);
  }
}

/** A pause inside a helper's own protocol (a retry back-off), never a wait for an outcome. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
