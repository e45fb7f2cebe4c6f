// Per-key request rate limit: a Redis token bucket evaluated by one Lua script (rate-limit.lua).
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
    ternTokenBucket(key: string, rate: number, burst: number, cost: number): Promise<number[]>;
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

  async take(id: string, bucket: Bucket, cost = 1): Promise<RateLimitResult> {
    // One EVALSHA per request: the requests read in one event-loop turn share one socket write.
    coalesceWrites(this.redis);
    const [allowed, remaining, fullMs, waitMs] = await this.redis.ternTokenBucket(
      this.keyOf(id),
      bucket.perSecond,
      bucket.burst,
      cost,
    );
    return {
      allowed: allowed === 1,
      limit: bucket.burst,
      remaining: remaining ?? 0,
      resetSeconds: Math.ceil((fullMs ?? 0) / 1000),
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((waitMs ?? 0) / 1000)),
    };
  }
}
