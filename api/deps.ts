// Builds (and closes) everything the web process needs: pool, Redis connections, key cache,
// rate limiter. Tests build the same thing with their own config.
import { Authenticator } from '../shared/auth.js';
import type { Config } from '../shared/config.js';
import { createPool } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import { PromRecorder } from '../shared/prom/recorder.js';
import { createQueues } from '../shared/queues.js';
import { RateLimiter } from '../shared/rate-limit.js';
import { closeRedis, createRedis, waitReady, type Redis } from '../shared/redis.js';
import { isClusterUrl } from '../shared/redis-url.js';
import { redisKeys } from '../shared/redis-keys.js';
import type { AppDeps } from './types.js';

export interface OwnedDeps extends AppDeps {
  subscriber: Redis;
  close(): Promise<void>;
}

export async function createDeps(config: Config, logger: Logger): Promise<OwnedDeps> {
  const sql = createPool(config.databaseUrl, {
    max: config.databasePoolMax,
    application: 'tern-web',
    pooler: config.databasePooler,
  });
  const redis = createRedis(config.redisUrl, 'api', 'tern-web');
  const subscriber = createRedis(config.redisUrl, 'subscriber', 'tern-web');
  const keys = redisKeys(config.redisPrefix, { cluster: isClusterUrl(config.redisUrl) });
  if (!(await waitReady(redis, 5000))) {
    logger.warn(
      { event: 'REDIS_UNAVAILABLE' },
      'Redis is not reachable yet; until it is, the API answers 503 and the SMTP relay 451',
    );
  }
  const auth = new Authenticator({
    sql,
    brand: config.brand,
    publisher: redis,
    subscriber,
    channel: keys.authInvalidate,
    logger,
  });
  // The subscription is retried by ioredis when Redis comes back; do not block start-up on it.
  auth
    .start()
    .catch((err: unknown) => logger.warn({ event: 'AUTH_SUBSCRIBE_FAILED', err }, 'key cache subscription failed'));
  const queues = createQueues(redis, keys.bullPrefix);
  const prom = new PromRecorder(redis, keys.prom, logger).start();
  return {
    config,
    sql,
    redis,
    subscriber,
    redisKeys: keys,
    auth,
    rateLimiter: new RateLimiter(redis, keys.rateLimit),
    queues,
    logger,
    prom,
    async close() {
      await prom.close();
      await queues.close();
      await closeRedis(subscriber);
      await closeRedis(redis);
      await sql.end({ timeout: 5 });
    },
  };
}
