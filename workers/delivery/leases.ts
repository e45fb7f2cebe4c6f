// Attempt leases of one worker process. Each run of a delivery job holds its attempts under a
// token of its own (`<process>:<job id>:<n>`); while the run lives, this process renews the
// leases of every token it holds every few seconds, so that another job can take an attempt
// over only after its holder died (or lost Postgres for longer than the lease), seconds later.
// A holder that was itself stopped past its lease (SIGSTOP, a VM paused, an event loop blocked)
// may find its attempts taken over when it wakes: it knows, from its own clock, that it has not
// renewed in time, and sends none of them (`holds`), until a new hand-over leases them again.
import { randomBytes } from 'node:crypto';
import { renewLeases } from '../../shared/db/delivery-attempts.js';
import type { Sql } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';

/** How long an attempt stays its holder's without a renewal. */
export const ATTEMPT_LEASE_SECONDS = 15;
/** How often the holder renews (a few renewals fit in one lease). */
export const LEASE_RENEW_MS = 4000;
/**
 * A holder stops sending this long before its lease could have run out (clocks of two machines
 * differ a little; the other job needs the lease expired in Postgres's time).
 */
const LEASE_MARGIN_MS = 1000;

export class AttemptLeases {
  /** This process's token: the first part of every holder token (and its journal's name). */
  readonly process = randomBytes(6).toString('hex');
  private readonly held = new Set<string>();
  /** Per token, the local time its lease certainly lasts until (the last lease or renewal + lease). */
  private readonly until = new Map<string, number>();
  /** Tokens that went past `until` unrenewed: their attempts may be another job's now. */
  private readonly lapsed = new Set<string>();
  private runs = 0;
  private timer: NodeJS.Timeout | null = null;
  private failing = false;

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
    private readonly leaseSeconds = ATTEMPT_LEASE_SECONDS,
    private readonly renewMs = LEASE_RENEW_MS,
  ) {}

  /** A token for one run of a job; renewed until `release`. */
  hold(jobId: string): string {
    const token = `${this.process}:${jobId}:${++this.runs}`;
    this.held.add(token);
    this.until.set(token, Date.now() + this.leaseSeconds * 1000);
    this.timer ??= setInterval(() => void this.renew(), this.renewMs).unref();
    return token;
  }

  release(token: string): void {
    this.held.delete(token);
    this.until.delete(token);
    this.lapsed.delete(token);
  }

  /**
   * A hand-over that started at `at` (local time) leased attempts to `token`: those it returned
   * are the token's until `at` + the lease, whatever happened before.
   */
  leased(token: string, at: number): void {
    if (!this.held.has(token)) return;
    this.until.set(token, at + this.leaseSeconds * 1000);
    this.lapsed.delete(token);
  }

  /** Whether the attempts `token` leased are certainly still its own: false once its lease may have run out. */
  holds(token: string, now = Date.now()): boolean {
    if (this.lapsed.has(token)) return false;
    const until = this.until.get(token);
    if (until === undefined) return false;
    if (now < until - LEASE_MARGIN_MS) return true;
    this.lapsed.add(token);
    return false;
  }

  get seconds(): number {
    return this.leaseSeconds;
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const started = Date.now();
    // A lapsed token is not renewed: its rows may be another job's (renewing would be harmless, as
    // the holder column moved, but what it still has is only known from a new hand-over).
    const tokens = [...this.held].filter((t) => this.holds(t, started));
    if (tokens.length === 0) return;
    try {
      await renewLeases(this.sql, tokens, this.leaseSeconds);
      for (const t of tokens)
        if (this.held.has(t) && !this.lapsed.has(t)) this.until.set(t, started + this.leaseSeconds * 1000);
      if (this.failing) this.logger.info({ event: 'DELIVERY_LEASE_RENEWED' }, 'attempt leases renewed again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) {
        this.logger.warn({ event: 'DELIVERY_LEASE_RENEW_FAILED', err }, 'could not renew attempt leases');
      }
      this.failing = true;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
