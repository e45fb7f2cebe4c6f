// Whether the smarthost (SMTP_SMARTHOST) answers, as a delivery worker's connections find it.
// Every message it cannot take is deferred and retried by itself, so without a word here an
// outage would show only as mail piling up: the first connection that fails (refused, unreachable,
// timed out, a bad greeting or a refused AUTH) logs SMARTHOST_UNREACHABLE, again every
// `repeatMs` while it lasts with the count of failed connections; the first new connection that
// succeeds afterwards logs SMARTHOST_REACHABLE with how long it was away. A smarthost that flaps
// (refusing some new connections, taking others) still logs one SMARTHOST_UNREACHABLE per
// `repeatMs` at most.
import type { Logger } from '../../logger.js';

export class SmarthostWatch {
  private down: { since: number; failures: number; logged: boolean } | null = null;
  /** When SMARTHOST_UNREACHABLE was last logged: one line per `repeatMs` at most, flapping or not. */
  private loggedAt: number | null = null;

  constructor(
    /** `host:port`, never the URL (it may hold the AUTH password). */
    private readonly smarthost: string,
    private readonly logger: Logger,
    private readonly repeatMs = 300_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new connection failed. */
  failed(err: unknown): void {
    const t = this.now();
    this.down ??= { since: t, failures: 0, logged: false };
    this.down.failures++;
    if (this.loggedAt !== null && t - this.loggedAt < this.repeatMs) return;
    this.loggedAt = t;
    this.down.logged = true;
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

  /** A new connection was made (an idle one reused says nothing: its host may have gone since). */
  reached(): void {
    if (!this.down) return;
    const { since, failures, logged } = this.down;
    this.down = null;
    if (!logged) return;
    this.logger.info(
      { event: 'SMARTHOST_REACHABLE', smarthost: this.smarthost, failures, downForMs: this.now() - since },
      'the smarthost answers again',
    );
  }
}
