// Per-key request rate limit: a Redis token bucket evaluated by one Lua script (rate-limit.lua).
//
// Keys with a high limit take tokens in leases: the call that spends a request's token also takes
// up to 10 ms of the bucket's refill (LEASE_WINDOW_MS), and the process spends those from memory
// without asking Redis again. Every request admitted anywhere still spent one token of the one
// bucket in Redis, so the limit is never exceeded, whatever the number of web processes. The
// cost is bounded: a lease left unspent (a process that stops, a lease that expires after
// LEASE_TTL_MS) withholds at most 10 ms of refill from the other processes. At the default
// limit (10/s, burst 20) a lease would hold less than one token, so every request asks Redis.
import { readFileSync } from 'node:fs';
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
    ternTokenBucket(key: string, rate: number, burst: number, cost: number, lease: number): Promise<number[]>;
  }
}

export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly keyOf: (id: string) => string,
  ) {
    if (typeof (redis as Partial<Redis>).ternTokenBucket !== 'function') {
      // defineCommand sends EVALSHA and falls back to EVAL once per connection.
      redis.defineCommand('ternTokenBucket', { numberOfKeys: 1, lua: source() });
    }
  }

  /** Tokens taken from Redis ahead of need, per bucket id. */
  private readonly leases = new Map<string, Lease>();
  /** The Redis call under way per bucket id, so that concurrent requests share its lease. */
  private readonly pending = new Map<string, Promise<RateLimitResult>>();

  async take(id: string, bucket: Bucket, cost = 1): Promise<RateLimitResult> {
    const want = leaseSize(bucket);
    if (want === 0) return this.remote(id, bucket, cost, 0);
    for (;;) {
      const local = this.fromLease(id, bucket, cost);
      if (local) return local;
      const under = this.pending.get(id);
      if (!under) break;
      // Another request is fetching a lease for this key: wait for it, then spend from it.
      const r = await under.catch(() => null);
      if (!r?.allowed) break;
    }
    const call = this.remote(id, bucket, cost, want);
    this.pending.set(id, call);
    try {
      return await call;
    } finally {
      if (this.pending.get(id) === call) this.pending.delete(id);
    }
  }

  private fromLease(id: string, bucket: Bucket, cost: number): RateLimitResult | null {
    const lease = this.leases.get(id);
    if (!lease) return null;
    const now = Date.now();
    if (
      lease.tokens < cost ||
      now - lease.at > LEASE_TTL_MS ||
      lease.perSecond !== bucket.perSecond ||
      lease.burst !== bucket.burst
    ) {
      if (lease.tokens < cost || now - lease.at > LEASE_TTL_MS) this.leases.delete(id);
      return null;
    }
    lease.tokens -= cost;
    // What the bucket held after the lease, what is left of the lease, and the refill since.
    const refilled = Math.floor(((now - lease.at) * bucket.perSecond) / 1000);
    const remaining = Math.min(bucket.burst, lease.remaining + lease.tokens + refilled);
    return {
      allowed: true,
      limit: bucket.burst,
      remaining,
      resetSeconds: Math.ceil((bucket.burst - remaining) / bucket.perSecond),
      retryAfterSeconds: 0,
    };
  }

  private async remote(id: string, bucket: Bucket, cost: number, lease: number): Promise<RateLimitResult> {
    // One EVALSHA per request: the requests read in one event-loop turn share one socket write.
    coalesceWrites(this.redis);
    const [allowed, remaining, fullMs, waitMs, granted] = await this.redis.ternTokenBucket(
      this.keyOf(id),
      bucket.perSecond,
      bucket.burst,
      cost,
      lease,
    );
    if (allowed === 1 && (granted ?? 0) > 0) {
      if (this.leases.size >= MAX_LEASES) this.leases.clear();
      this.leases.set(id, {
        tokens: granted!,
        remaining: remaining ?? 0,
        at: Date.now(),
        perSecond: bucket.perSecond,
        burst: bucket.burst,
      });
    }
    return {
      allowed: allowed === 1,
      limit: bucket.burst,
      remaining: (remaining ?? 0) + (granted ?? 0),
      resetSeconds: Math.ceil((fullMs ?? 0) / 1000),
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((waitMs ?? 0) / 1000)),
    };
  }
}

interface Lease {
  /** Tokens of the lease not spent yet. */
  tokens: number;
  /** Tokens the bucket held in Redis once the lease was taken. */
  remaining: number;
  at: number;
  perSecond: number;
  burst: number;
}

/** A lease covers at most this much of the bucket's refill… */
export const LEASE_WINDOW_MS = 10;
/** …and at most a tenth of the bucket, and is dropped this long after it was taken. */
export const LEASE_TTL_MS = 1000;
const MAX_LEASES = 10_000;

/** Tokens to take ahead of need for `bucket`; 0 (no lease) when that would be under 2 tokens. */
export function leaseSize(bucket: Bucket): number {
  const n = Math.floor(Math.min((bucket.perSecond * LEASE_WINDOW_MS) / 1000, bucket.burst / 10));
  return n >= 2 ? n : 0;
}
