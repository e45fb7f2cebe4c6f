// Runs a sweep (the delivery sweep, the broadcast sweep) at once when Redis may have lost jobs,
// instead of at the next timed sweep: when a Redis connection comes back after a break, and when
// the sentinel key the sweep's workers keep is found missing (Redis lost its data: FLUSHALL, a
// restart without persistence, a failover to an empty replica). One sweep runs at a time; a trigger during a
// sweep runs another one after it. Each trigger also sweeps once more `followUpMs` later: a
// message stored (or due) in the seconds before the loss was too young for the first sweep's
// grace, and would otherwise wait for the timed sweep.
import type { Redis } from '../../shared/redis.js';
import type { WorkerDeps } from '../deps.js';

export const SENTINEL_CHECK_MS = 2000;
const FOLLOW_UP = ' (follow-up)';

export interface TriggerOptions {
  /** The sweep's own sentinel key (SET NX answers OK to one process per loss). */
  sentinel: string;
  checkEveryMs?: number;
}

export class SweepTrigger {
  private running: Promise<void> | null = null;
  private again = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onReady: () => void;
  private broken = false;
  private readonly onClose = () => (this.broken = true);
  private followUp: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: WorkerDeps,
    /** The sweep; it logs its own failure (its sweeper's event code). */
    private readonly run: (why: string) => Promise<unknown>,
    private readonly followUpMs: number,
    private readonly opts: TriggerOptions,
  ) {
    this.onReady = () => {
      if (!this.broken) return;
      this.broken = false;
      this.fire('redis reconnected');
    };
    for (const c of this.clients()) {
      c.on('close', this.onClose);
      c.on('ready', this.onReady);
    }
    this.timer = setInterval(() => void this.checkSentinel(), opts.checkEveryMs ?? SENTINEL_CHECK_MS).unref();
    void this.checkSentinel();
  }

  private clients(): Redis[] {
    return [this.deps.bull];
  }

  /** SET NX answers OK only when the key was missing: this process is the one to sweep. */
  private async checkSentinel(): Promise<void> {
    try {
      const set = await this.deps.redis.set(this.opts.sentinel, String(Date.now()), 'NX');
      if (set === 'OK') this.fire('redis lost its data (or is new)');
    } catch {
      // Redis is away: the reconnection will fire.
    }
  }

  fire(why: string): void {
    if (this.followUpMs > 0 && !why.endsWith(FOLLOW_UP)) {
      if (this.followUp) clearTimeout(this.followUp);
      this.followUp = setTimeout(() => this.fire(`${why}${FOLLOW_UP}`), this.followUpMs).unref();
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.run(why).catch(() => undefined); // `run` logs its own failures
        } while (this.again);
      } finally {
        this.running = null;
      }
    })();
  }

  /** Resolves when no sweep runs (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.followUp) clearTimeout(this.followUp);
    for (const c of this.clients()) {
      c.off('close', this.onClose);
      c.off('ready', this.onReady);
    }
    await this.idle();
  }
}
