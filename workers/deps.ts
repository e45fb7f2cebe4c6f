// What every queue consumer receives: config, pool, logger and a BullMQ connection factory.
import type { Config } from '../shared/config.js';
import { createPool, type Sql } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import { createQueues, type Queues } from '../shared/queues.js';
import { closeRedis, createRedis, type Redis } from '../shared/redis.js';
import { redisKeys, type RedisKeys } from '../shared/redis-keys.js';

export interface WorkerDeps {
  config: Config;
  sql: Sql;
  logger: Logger;
  redisKeys: RedisKeys;
  /** Shared BullMQ connection (maxRetriesPerRequest: null). */
  bull: Redis;
  /** Fail-fast connection for plain commands. */
  redis: Redis;
  /** Producer side of every queue (on the BullMQ connection). */
  queues: Queues;
  close(): Promise<void>;
}

export function createWorkerDeps(config: Config, logger: Logger): WorkerDeps {
  const sql = createPool(config.databaseUrl, { max: config.databasePoolMax, application: 'tern-worker' });
  const bull = createRedis(config.redisUrl, 'bullmq', 'tern-worker');
  const redis = createRedis(config.redisUrl, 'api', 'tern-worker');
  const keys = redisKeys(config.redisPrefix);
  const queues = createQueues(bull, keys.bullPrefix);
  return {
    config,
    sql,
    logger,
    redisKeys: keys,
    bull,
    redis,
    queues,
    async close() {
      await queues.close();
      await closeRedis(redis);
      await closeRedis(bull);
      await sql.end({ timeout: 5 });
    },
  };
}
