// Per-endpoint concurrency cap for webhook delivery: a lease set in Redis per endpoint. A slow or
// hanging receiver can hold at most `limit` worker slots; its other deliveries wait (their jobs
// are delayed a little) while every other endpoint's keep flowing. Leases expire on their own,
// so a worker killed mid-attempt frees its slot after the lease time.
// One Redis call per attempt: a release is not sent on its own but rides on the next acquire of
// the same endpoint from this process (or a flush a few ms later when none comes). An attempt
// refused while this process holds slots of an endpoint that answers fast waits briefly for one
// of them (handed over locally) instead of going back to the queue.
import type { Redis } from '../redis.js';

// KEYS[1] lease set; ARGV: lease ms, limit, member, then members to release first.
// Redis TIME keeps every worker on one clock.
const ACQUIRE = `
for i = 4, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[3])
if held or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
  return 1
end
return 0`;

const FLUSH_MS = 5;

interface Endpoint {
  /** Slots this process holds: delivery id → acquired at (ms). */
  held: Map<string, number>;
  /** Released here, not yet removed in Redis. */
  released: string[];
  waiters: (() => void)[];
  /** Acquires in flight (the entry must outlive them). */
  acquiring: number;
  /** Smoothed time a slot of this endpoint is held (ms). */
  holdMs: number;
}

export class EndpointSlots {
  private readonly endpoints = new Map<string, Endpoint>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly key: (webhookId: string) => string,
    private readonly limit: number,
    private readonly leaseMs: number,
  ) {}

  private endpoint(webhookId: string): Endpoint {
    let e = this.endpoints.get(webhookId);
    if (!e) {
      e = { held: new Map(), released: [], waiters: [], acquiring: 0, holdMs: Infinity };
      this.endpoints.set(webhookId, e);
    }
    return e;
  }

  private async tryAcquire(webhookId: string, e: Endpoint, deliveryId: string): Promise<boolean> {
    const releasing = e.released;
    e.released = [];
    let got: unknown;
    e.acquiring++;
    try {
      got = await this.redis.eval(ACQUIRE, 1, this.key(webhookId), this.leaseMs, this.limit, deliveryId, ...releasing);
    } catch (err) {
      e.released.push(...releasing);
      throw err;
    } finally {
      e.acquiring--;
    }
    if (got === 1) e.held.set(deliveryId, Date.now());
    return got === 1;
  }

  /**
   * Takes a slot of the endpoint for this delivery. When none is free and this process holds
   * slots of the endpoint that are usually released within `waitMs`, waits up to `waitMs` for one.
   */
  async acquire(webhookId: string, deliveryId: string, waitMs = 0): Promise<boolean> {
    const e = this.endpoint(webhookId);
    if (await this.tryAcquire(webhookId, e, deliveryId)) return true;
    const deadline = Date.now() + waitMs;
    while (e.held.size > 0 && e.holdMs < waitMs && Date.now() < deadline) {
      const woken = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          const at = e.waiters.indexOf(wake);
          if (at >= 0) e.waiters.splice(at, 1);
          resolve(false);
        }, deadline - Date.now());
        e.waiters.push(wake);
      });
      if (!woken) return false;
      if (await this.tryAcquire(webhookId, e, deliveryId)) return true;
    }
    return false;
  }

  /** Frees the slot: handed to a local waiter, or removed in Redis with the next call. */
  release(webhookId: string, deliveryId: string): void {
    const e = this.endpoint(webhookId);
    const since = e.held.get(deliveryId);
    e.held.delete(deliveryId);
    if (since !== undefined) {
      const held = Date.now() - since;
      e.holdMs = e.holdMs === Infinity ? held : 0.8 * e.holdMs + 0.2 * held;
    }
    e.released.push(deliveryId);
    const waiter = e.waiters.shift();
    if (waiter) waiter();
    else this.flushTimer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Sends the releases no acquire has carried. */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const pipeline = this.redis.pipeline();
    let n = 0;
    for (const [webhookId, e] of this.endpoints) {
      if (e.released.length > 0) {
        pipeline.zrem(this.key(webhookId), ...e.released);
        e.released = [];
        n++;
      }
      if (e.held.size === 0 && e.waiters.length === 0 && e.acquiring === 0) this.endpoints.delete(webhookId);
    }
    // A lost release only keeps the slot until its lease ends.
    if (n > 0) await pipeline.exec().catch(() => {});
  }
}
