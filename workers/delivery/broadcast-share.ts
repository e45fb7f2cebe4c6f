// The broadcast share of one worker process (docs/delivery.md "Streams, priority and fairness").
// Each stream has a BullMQ worker of its own, so transactional mail never waits for a slot held
// by broadcast mail; this bounds what broadcast mail takes of the process while transactional
// mail is being delivered. While a transactional delivery runs here (and for HOLD_MS after the
// last one ended, so that a steady trickle of transactional mail does not make the broadcast
// worker swing up and down), the broadcast worker starts no new job past BROADCAST_MAX_SHARE of
// DELIVERY_CONCURRENCY (one slot at least); otherwise it may use all of DELIVERY_CONCURRENCY.
// Deliveries already under way are never interrupted: the surplus drains as they finish. When the
// broadcast stream runs on a thread of its own (workers/stream-thread.ts), the main thread's share
// tells the thread's through `onChange` and `setRemote`.
import type { Worker } from 'bullmq';

/** How long broadcast mail stays at its share after the last transactional delivery ended. */
export const HOLD_MS = 2000;

export class BroadcastShare {
  /** Broadcast slots while transactional mail is being delivered. */
  readonly cap: number;
  private worker: Pick<Worker, 'concurrency'> | null = null;
  private transactional = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Held by transactional mail of another thread of the process. */
  private remote = false;
  private listener: ((limited: boolean) => void) | null = null;
  private last = false;

  constructor(
    private readonly concurrency: number,
    share: number,
    private readonly holdMs = HOLD_MS,
  ) {
    this.cap = Math.max(1, Math.min(concurrency, Math.floor(share * concurrency)));
  }

  /** The process's broadcast worker, whose concurrency this sets. */
  attach(worker: Pick<Worker, 'concurrency'>): void {
    this.worker = worker;
    this.apply();
  }

  detach(): void {
    this.worker = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Called with the new state whenever `limited` changes. */
  onChange(listener: (limited: boolean) => void): void {
    this.listener = listener;
  }

  /** Transactional mail of another thread starts or stops holding broadcast mail to its share. */
  setRemote(limited: boolean): void {
    this.remote = limited;
    this.apply();
  }

  /** A transactional delivery starts in this process; pair with `transactionalEnded`. */
  transactionalStarted(): void {
    this.transactional++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.apply();
  }

  transactionalEnded(): void {
    this.transactional--;
    if (this.transactional > 0) return;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.apply();
    }, this.holdMs).unref();
  }

  /** Whether broadcast mail is held to its share now. */
  get limited(): boolean {
    return this.transactional > 0 || this.timer !== null || this.remote;
  }

  private apply(): void {
    const limited = this.limited;
    const n = limited ? this.cap : this.concurrency;
    if (this.worker && this.worker.concurrency !== n) this.worker.concurrency = n;
    if (limited !== this.last) {
      this.last = limited;
      this.listener?.(limited);
    }
  }
}
