// Attempt leases of one worker process. Each run of a delivery job holds its attempts under a
// token of its own (`<process>:<job id>:<n>`); while the run lives, this process renews the
// leases of every token it holds every few seconds, so that another job can take an attempt
// over only after its holder died (or lost Postgres for longer than the lease), seconds later.
import { randomBytes } from 'node:crypto';
import { renewLeases } from '../../shared/db/delivery-attempts.js';
import type { Sql } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';

/** How long an attempt stays its holder's without a renewal. */
export const ATTEMPT_LEASE_SECONDS = 15;
/** How often the holder renews (a few renewals fit in one lease). */
export const LEASE_RENEW_MS = 4000;

export class AttemptLeases {
  /** This process's token: the first part of every holder token (and its journal's name). */
  readonly process = randomBytes(6).toString('hex');
  private readonly held = new Set<string>();
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
    this.timer ??= setInterval(() => void this.renew(), this.renewMs).unref();
    return token;
  }

  release(token: string): void {
    this.held.delete(token);
  }

  get seconds(): number {
    return this.leaseSeconds;
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    try {
      await renewLeases(this.sql, [...this.held], this.leaseSeconds);
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
