// Paces outbound delivery per mailbox provider across every worker (DESIGN §6 `blocked`): a
// Redis token bucket whose rate halves on each throttle/block reply and recovers linearly. A
// provider judges each sending address on its own, so a pool address has its own bucket per
// provider (`address`; none: the host's default address).
import { readFileSync } from 'node:fs';
import { fromRoot } from '../../shared/paths.js';
import { coalesceWrites, waitReady, type Redis } from '../../shared/redis.js';
import type { RedisKeys } from '../../shared/redis-keys.js';
import { DEFAULT_THROTTLE, type ThrottleOptions } from '../../shared/mail/throttle.js';

let script: string | null = null;
const source = () => (script ??= readFileSync(fromRoot('shared', 'mail', 'throttle.lua'), 'utf8'));

export { DEFAULT_THROTTLE, type ThrottleOptions } from '../../shared/mail/throttle.js';

declare module 'ioredis' {
  interface RedisCommander {
    ternProviderThrottle(key: string, ...args: (string | number)[]): Promise<[string, string]>;
  }
}

export class ProviderThrottle {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly opts: ThrottleOptions = DEFAULT_THROTTLE,
  ) {
    if (typeof (redis as Partial<Redis>).ternProviderThrottle !== 'function') {
      // EVALSHA: the script's text goes to Redis once per connection, not with every message.
      redis.defineCommand('ternProviderThrottle', { numberOfKeys: 1, lua: source() });
    }
  }

  private async run(
    op: 'take' | 'slow' | 'peek',
    provider: string,
    address: string | null,
  ): Promise<{ waitMs: number; rate: number }> {
    const o = this.opts;
    // The fail-fast client has no offline queue: the first job after start must not fail because
    // the connection is still being made.
    if (this.redis.status !== 'ready') await waitReady(this.redis, 5000);
    // The takes of the jobs that run in one event-loop turn leave in one socket write.
    coalesceWrites(this.redis);
    const [wait, rate] = await this.redis.ternProviderThrottle(
      this.keys.providerBucket(provider, address),
      op,
      o.maxRate,
      o.minRate,
      o.burst,
      o.recover,
      o.maxWaitSeconds,
    );
    return { waitMs: Number(wait), rate: Number(rate) };
  }

  /** Waits for a token; returns false (no token taken) when the wait would exceed maxWaitSeconds. */
  async take(provider: string, address: string | null = null): Promise<boolean> {
    const { waitMs } = await this.run('take', provider, address);
    if (waitMs > this.opts.maxWaitSeconds * 1000) return false;
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    return true;
  }

  /** A throttle or block reply: halve the provider's rate. Returns the new rate. */
  async slow(provider: string, address: string | null = null): Promise<number> {
    return (await this.run('slow', provider, address)).rate;
  }

  /** The provider's current rate (msg/s), recovery since the last slow-down included. */
  async rate(provider: string, address: string | null = null): Promise<number> {
    return (await this.run('peek', provider, address)).rate;
  }
}
