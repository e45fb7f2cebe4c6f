// What every queue consumer receives (config, pool, logger, Redis and BullMQ connections) and
// the shape of a consumer, declared here so that workers/registry.ts and the consumers it lists
// both import it without importing each other.
import type { Worker } from 'bullmq';
import type { Config } from '../shared/config.js';
import { createPool, type Sql } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';
import { PromRecorder } from '../shared/prom/recorder.js';
import { createQueues, type Queues } from '../shared/queues.js';
import { closeRedis, createRedis, type Redis } from '../shared/redis.js';
import { isClusterUrl } from '../shared/redis-url.js';
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
  /** Cluster-wide Prometheus counters (shared/prom/recorder.ts). */
  prom: PromRecorder;
  close(): Promise<void>;
}

/** One entry of workers/registry.ts: the queue it consumes and how its BullMQ Worker starts. */
export interface QueueConsumer {
  queue: string;
  start(deps: WorkerDeps): Worker | Promise<Worker>;
}

/** `application`: the Postgres application_name of the pool (the broadcast thread's differs). */
export function createWorkerDeps(config: Config, logger: Logger, application = 'tern-worker'): WorkerDeps {
  const sql = createPool(config.databaseUrl, {
    max: config.databasePoolMax,
    application,
    pooler: config.databasePooler,
  });
  const bull = createRedis(config.redisUrl, 'bullmq', 'tern-worker');
  const redis = createRedis(config.redisUrl, 'api', 'tern-worker');
  const keys = redisKeys(config.redisPrefix, { cluster: isClusterUrl(config.redisUrl) });
  const queues = createQueues(bull, keys.bullPrefix);
  const prom = new PromRecorder(redis, keys.prom, logger).start();
  return {
    config,
    sql,
    logger,
    redisKeys: keys,
    bull,
    redis,
    queues,
    prom,
    async close() {
      await prom.close();
      await queues.close();
      await closeRedis(redis);
      await closeRedis(bull);
      await sql.end({ timeout: 5 });
    },
  };
}
