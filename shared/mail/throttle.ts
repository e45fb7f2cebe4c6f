// The per-provider pacing of outbound delivery (DESIGN §6 `blocked`): the token bucket's options
// (workers/delivery/throttle.ts runs shared/mail/throttle.lua with them) and a read-only look at
// every provider's current rate for the console's Queues page.
import type { Redis } from '../redis.js';
import type { RedisKeys } from '../redis-keys.js';

export interface ThrottleOptions {
  /** Messages per second to one provider when nothing slowed it. */
  maxRate: number;
  minRate: number;
  burst: number;
  /** Messages per second the rate regains per second. */
  recover: number;
  /** Longest a delivery waits in-line for a token; longer waits defer the recipient instead. */
  maxWaitSeconds: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = {
  maxRate: 500,
  minRate: 0.1,
  burst: 500,
  recover: 1,
  maxWaitSeconds: 5,
};

export interface ProviderRate {
  provider: string;
  /** Messages per second allowed now (recovery since the last change included, as throttle.lua computes it). */
  rate: number;
  /** Below the maximum: a throttle or block reply slowed it and it has not fully recovered. */
  slowed: boolean;
  /** When the bucket last changed (a token taken or a slow-down). */
  changedAt: Date;
}

/** Every provider bucket in Redis (they expire a day after their last use), slowest first. */
export async function providerRates(
  redis: Redis,
  keys: RedisKeys,
  opts: ThrottleOptions = DEFAULT_THROTTLE,
  now = Date.now(),
): Promise<ProviderRate[]> {
  const prefix = keys.providerBucket('');
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0' && found.length < 1000);
  const out: ProviderRate[] = [];
  for (const key of found) {
    const [rate, ts] = await redis.hmget(key, 'rate', 'ts');
    if (rate === null || ts === null) continue;
    const dt = Math.max(0, now / 1000 - Number(ts));
    const current = Math.min(opts.maxRate, Number(rate) + opts.recover * dt);
    out.push({
      provider: key.slice(prefix.length),
      rate: current,
      slowed: current < opts.maxRate,
      changedAt: new Date(Number(ts) * 1000),
    });
  }
  return out.sort((a, b) => a.rate - b.rate || a.provider.localeCompare(b.provider));
}
