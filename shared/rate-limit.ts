// Per-key request rate limit: a Redis token bucket evaluated by one Lua script (rate-limit.lua).
//
// Keys with a high limit take tokens in leases: the call that spends a request's token also takes
// a few more (at most LEASE_TTL_MS of the bucket's refill and a tenth of its burst, sized to the
// process's recent use of the key), and the process spends them from memory for at most
// LEASE_TTL_MS without asking Redis again. Every request admitted anywhere spent a token of the
// one bucket in Redis, and the script lets the bucket refill only up to the burst minus the
// tokens leased in the last two lease windows (LEASE_WINDOW_MS each, a little longer than a
// lease lives), so bucket and leases never hold more than the burst, whatever the number of web
// processes; at most half the burst is out on lease at once, so that busy leasing cannot starve
// the refill. A lease left unspent withholds its tokens for at most two windows. At the default
// limit (10/s, burst 20) a lease would hold less than two tokens, so every request asks Redis.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fromRoot } from './paths.js';
import { coalesceWrites, type Redis } from './redis.js';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the bucket is full again. */
  resetSeconds: number;
  /** Whole seconds (≥ 1) to wait before `cost` tokens are available; 0 when allowed. */
  retryAfterSeconds: number;
}

export interface Bucket {
  perSecond: number;
  burst: number;
}

let script: string | null = null;

function source(): string {
  return (script ??= readFileSync(fromRoot('shared', 'rate-limit.lua'), 'utf8'));
}

declare module 'ioredis' {
  interface RedisCommander {
    ternTokenBucket(
      key: string,
      rate: number,
      burst: number,
      cost: number,
      lease: number,
      windowMs: number,
    ): Promise<number[]>;
  }
}

export class RateLimiter {
  /** Per bucket id: the lease being spent, and how large the next one should be. */
  private readonly leases = new Map<string, Lease>();
  /** The Redis call under way per bucket id that takes a lease. */
  private readonly pending = new Map<string, Promise<RateLimitResult>>();
  /** Tokens wanted by the requests waiting for that call, per bucket id. */
  private readonly waiting = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly keyOf: (id: string) => string,
  ) {
    if (typeof (redis as Partial<Redis>).ternTokenBucket !== 'function') {
      // defineCommand sends EVALSHA and falls back to EVAL once per connection.
      redis.defineCommand('ternTokenBucket', { numberOfKeys: 1, lua: source() });
    }
  }

  /** Fills a bucket again (drops its Redis state); a lease this process holds on it is kept. */
  async reset(id: string): Promise<void> {
    await this.redis.del(this.keyOf(id));
  }

  /** The answer from this process's lease when it holds one, without waiting; else null. */
  takeLeased(id: string, bucket: Bucket, cost = 1): RateLimitResult | null {
    return leaseSize(bucket) === 0 ? null : this.fromLease(id, bucket, cost);
  }

  async take(id: string, bucket: Bucket, cost = 1): Promise<RateLimitResult> {
    const max = leaseSize(bucket);
    if (max === 0) return await this.remote(id, bucket, cost, 0);
    // Requests that find a lease call under way wait for it and spend from its lease; when it
    // is spent already, the first of them takes the next lease, sized for all who wait, and
    // the others wait for that one. After two such rounds a request asks for its own token.
    for (let round = 0; ; round++) {
      const local = this.fromLease(id, bucket, cost);
      if (local) return local;
      const under = this.pending.get(id);
      if (!under) break;
      if (round === 2) {
        const lease = this.leases.get(id);
        if (lease) lease.missed += cost; // the next lease is sized for these too
        return await this.remote(id, bucket, cost, 0);
      }
      this.waiting.set(id, (this.waiting.get(id) ?? 0) + cost);
      try {
        await under; // its failure is this request's too
      } finally {
        const n = this.waiting.get(id)! - cost;
        if (n > 0) this.waiting.set(id, n);
        else this.waiting.delete(id);
      }
    }
    const want = Math.min(max, Math.max(this.nextLease(id, bucket, max), this.waiting.get(id) ?? 0));
    const call = this.remote(id, bucket, cost, want);
    this.pending.set(id, call);
    try {
      return await call;
    } finally {
      this.pending.delete(id);
    }
  }

  private fromLease(id: string, bucket: Bucket, cost: number): RateLimitResult | null {
    const lease = this.leases.get(id);
    if (!lease || lease.tokens < cost || lease.perSecond !== bucket.perSecond || lease.burst !== bucket.burst) {
      return null;
    }
    if (performance.now() - lease.at > LEASE_TTL_MS) return null;
    lease.tokens -= cost;
    lease.used += cost;
    const remaining = Math.min(bucket.burst, lease.remaining + lease.tokens);
    return {
      allowed: true,
      limit: bucket.burst,
      remaining,
      resetSeconds: Math.ceil((bucket.burst - remaining) / bucket.perSecond),
      retryAfterSeconds: 0,
    };
  }

  /**
   * The size of the next lease: twice the last one when it ran out before its time, else twice
   * what was spent of it; at least 2 and at most `max`.
   */
  private nextLease(id: string, bucket: Bucket, max: number): number {
    const last = this.leases.get(id);
    if (!last || last.perSecond !== bucket.perSecond || last.burst !== bucket.burst) {
      return Math.min(max, FIRST_LEASE);
    }
    const ranOut = last.tokens === 0 && last.granted > 0;
    return Math.max(2, Math.min(max, ranOut ? (last.granted + last.missed) * 2 : (last.used + last.missed) * 2));
  }

  private async remote(id: string, bucket: Bucket, cost: number, lease: number): Promise<RateLimitResult> {
    // Taken before the call: the lease's time runs from before Redis granted it.
    const at = performance.now();
    // One EVALSHA per call: the calls made in one event-loop turn share one socket write.
    coalesceWrites(this.redis);
    const [allowed, remaining, fullMs, waitMs, granted] = await this.redis.ternTokenBucket(
      this.keyOf(id),
      bucket.perSecond,
      bucket.burst,
      cost,
      lease,
      // Always: a call without a lease must not refill over the leases of others.
      LEASE_WINDOW_MS,
    );
    if (lease > 0)
      this.keep(id, {
        tokens: granted ?? 0,
        granted: granted ?? 0,
        used: 0,
        missed: 0,
        remaining: remaining ?? 0,
        at,
        ...bucket,
      });
    return {
      allowed: allowed === 1,
      limit: bucket.burst,
      remaining: (remaining ?? 0) + (granted ?? 0),
      resetSeconds: Math.ceil((fullMs ?? 0) / 1000),
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((waitMs ?? 0) / 1000)),
    };
  }

  private keep(id: string, lease: Lease): void {
    this.leases.delete(id); // re-inserted last: the map's order is the order of use
    if (this.leases.size >= MAX_LEASES) {
      // The oldest entries first; their leases have long ended.
      for (const old of this.leases.keys()) {
        this.leases.delete(old);
        if (this.leases.size < MAX_LEASES * 0.9) break;
      }
    }
    this.leases.set(id, lease);
  }
}

interface Lease {
  /** Tokens of the lease not spent yet. */
  tokens: number;
  granted: number;
  used: number;
  /** Requests that waited for this lease and found it spent. */
  missed: number;
  /** Tokens the bucket held in Redis once the lease was taken. */
  remaining: number;
  /** performance.now() before the call that took it. */
  at: number;
  perSecond: number;
  burst: number;
}

/** A lease holds at most this much of the bucket's refill, and is spent within this time. */
export const LEASE_TTL_MS = 50;
/** Redis counts a lease as outstanding for one to two windows of this length after its grant. */
const LEASE_WINDOW_MS = LEASE_TTL_MS + 10;
const FIRST_LEASE = 8;
const MAX_LEASES = 10_000;

/** The largest lease for `bucket`; 0 (no leases) when it would be under 2 tokens. */
export function leaseSize(bucket: Bucket): number {
  const n = Math.floor(Math.min((bucket.perSecond * LEASE_TTL_MS) / 1000, bucket.burst / 10));
  return n >= 2 ? n : 0;
}
