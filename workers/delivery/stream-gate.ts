// The broadcast share of one delivery worker (docs/delivery.md "Streams, priority and fairness").
// The queue's priorities already hand a free slot to transactional mail before broadcast mail;
// this gate bounds what broadcast mail may hold when transactional mail waits: a broadcast job
// that would take the worker past BROADCAST_MAX_SHARE of its slots while a transactional job
// waits gives its slot back (the job returns to the queue with its priority, briefly delayed) and
// the transactional job takes the slot. With no transactional job waiting, broadcast mail may use
// every slot: the check costs one Redis round trip, and only past the share.
import type { DeliveryJob, DeliveryQueue } from '../../shared/delivery-queue.js';

export class StreamGate {
  /** Broadcast jobs of this worker past the gate and not yet finished. */
  private broadcast = 0;
  readonly cap: number;

  constructor(
    private readonly queue: Pick<DeliveryQueue, 'transactionalWaiting'>,
    concurrency: number,
    share: number,
  ) {
    this.cap = share <= 0 ? 0 : Math.max(1, Math.floor(share * concurrency));
  }

  /** Whether the job may run now; a true answer must be paired with `leave`. */
  async enter(job: DeliveryJob): Promise<boolean> {
    if (job.stream !== 'broadcast') return true;
    // Counted before the look-up, so that concurrent entries see each other.
    this.broadcast++;
    if (this.broadcast <= this.cap) return true;
    let waiting: boolean;
    try {
      waiting = await this.queue.transactionalWaiting();
    } catch {
      waiting = false; // Redis trouble: the job's own steps will meet it and wait.
    }
    if (!waiting) return true;
    this.broadcast--;
    return false;
  }

  leave(job: DeliveryJob): void {
    if (job.stream === 'broadcast') this.broadcast--;
  }

  /** Broadcast jobs running now (for tests and logs). */
  get activeBroadcast(): number {
    return this.broadcast;
  }
}
