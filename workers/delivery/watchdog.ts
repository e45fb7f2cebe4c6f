// Notices a delivery worker that holds jobs but makes no progress (no job finished, no result
// recorded) for a while: a slot never given back, a dependency hanging every call. It logs
// DELIVERY_WORKER_STALLED once per stall (with the count of stalls so far) and
// DELIVERY_WORKER_RESUMED when progress comes back; it changes nothing itself.
import type { Logger } from '../../shared/logger.js';

export interface WatchdogOptions {
  /** No progress for this long while jobs are held counts as a stall (default 60 s). */
  stallMs: number;
  /** How often to look (default 5 s). */
  checkEveryMs: number;
}

export const DEFAULT_WATCHDOG: WatchdogOptions = { stallMs: 60_000, checkEveryMs: 5000 };

export class ProgressWatchdog {
  private active = 0;
  private lastProgress = Date.now();
  private stalledSince: number | null = null;
  /** Stalls seen since the worker started. */
  stalls = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly logger: Logger,
    private readonly opts: WatchdogOptions = DEFAULT_WATCHDOG,
  ) {
    this.timer = setInterval(() => this.check(), opts.checkEveryMs).unref();
  }

  /** A job started; its `done` is called when it ends (either way). */
  started(): () => void {
    if (this.active === 0) this.lastProgress = Date.now();
    this.active++;
    return () => {
      this.active--;
      this.progress();
    };
  }

  /** Something moved (a result recorded, a job finished). */
  progress(): void {
    this.lastProgress = Date.now();
    if (this.stalledSince !== null) {
      this.logger.warn(
        { event: 'DELIVERY_WORKER_RESUMED', stalledMs: Date.now() - this.stalledSince, stalls: this.stalls },
        'delivery worker makes progress again',
      );
      this.stalledSince = null;
    }
  }

  check(): void {
    const idleMs = Date.now() - this.lastProgress;
    if (this.active === 0 || idleMs < this.opts.stallMs || this.stalledSince !== null) return;
    this.stalledSince = this.lastProgress;
    this.stalls++;
    this.logger.error(
      { event: 'DELIVERY_WORKER_STALLED', activeJobs: this.active, idleMs, stalls: this.stalls },
      'delivery worker holds jobs but made no progress',
    );
  }

  close(): void {
    clearInterval(this.timer);
  }
}
