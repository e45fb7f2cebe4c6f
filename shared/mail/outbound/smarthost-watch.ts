// Whether the smarthost (SMTP_SMARTHOST) answers, as a delivery worker's connections find it.
// Every message it cannot take is deferred and retried by itself, so without a word here an
// outage would show only as mail piling up: the first connection that fails (refused, unreachable,
// timed out, a bad greeting or a refused AUTH) logs SMARTHOST_UNREACHABLE, again every
// `repeatMs` while it lasts with the count of failed connections; the first connection that
// succeeds afterwards logs SMARTHOST_REACHABLE with how long it was away.
import type { Logger } from '../../logger.js';

export class SmarthostWatch {
  private down: { since: number; loggedAt: number; failures: number } | null = null;

  constructor(
    /** `host:port`, never the URL (it may hold the AUTH password). */
    private readonly smarthost: string,
    private readonly logger: Logger,
    private readonly repeatMs = 300_000,
    private readonly now: () => number = Date.now,
  ) {}

  failed(err: unknown): void {
    const t = this.now();
    if (!this.down) {
      this.down = { since: t, loggedAt: t, failures: 1 };
    } else {
      this.down.failures++;
      if (t - this.down.loggedAt < this.repeatMs) return;
      this.down.loggedAt = t;
    }
    this.logger.warn(
      {
        event: 'SMARTHOST_UNREACHABLE',
        smarthost: this.smarthost,
        err,
        failures: this.down.failures,
        since: new Date(this.down.since).toISOString(),
      },
      'cannot connect to the smarthost; messages are deferred and retried',
    );
  }

  reached(): void {
    if (!this.down) return;
    const { since, failures } = this.down;
    this.down = null;
    this.logger.info(
      { event: 'SMARTHOST_REACHABLE', smarthost: this.smarthost, failures, downForMs: this.now() - since },
      'the smarthost answers again',
    );
  }
}
