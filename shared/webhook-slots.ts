// Per-endpoint concurrency cap for webhook delivery: a lease set in Redis per endpoint. A slow or
// hanging receiver can hold at most `limit` worker slots; its other deliveries wait (their jobs
// are delayed a little) while every other endpoint's keep flowing. Leases expire on their own,
// so a worker killed mid-attempt frees its slot after the lease time.
import type { Redis } from './redis.js';

// KEYS[1] lease set; ARGV: lease ms, limit, member. Redis TIME keeps every worker on one clock.
const ACQUIRE = `
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

export class EndpointSlots {
  constructor(
    private readonly redis: Redis,
    private readonly key: (webhookId: string) => string,
    private readonly limit: number,
    private readonly leaseMs: number,
  ) {}

  async acquire(webhookId: string, deliveryId: string): Promise<boolean> {
    const got = await this.redis.eval(ACQUIRE, 1, this.key(webhookId), this.leaseMs, this.limit, deliveryId);
    return got === 1;
  }

  async release(webhookId: string, deliveryId: string): Promise<void> {
    await this.redis.zrem(this.key(webhookId), deliveryId);
  }
}
