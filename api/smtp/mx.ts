// Entry of the `mx` process: the inbound MX for reply.<domain> and the VERP bounce domain
// bounces.<domain> (DESIGN §10). It stores and enqueues; the inbound worker parses. On SIGTERM
// it stops accepting connections, lets open sessions finish, then closes Redis and Postgres.
import { loadConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logger.js';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { fatal, onShutdown } from '../../shared/shutdown.js';
import { createMxServer } from './mx-server.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    fatal(null, err);
  }
  const logger = createLogger(config.logLevel, 'mx');
  const sql = createPool(config.databaseUrl, { max: config.databasePoolMax, application: 'tern-mx' });
  const redis = createRedis(config.redisUrl, 'api', 'tern-mx');
  const queues = createQueues(redis, redisKeys(config.redisPrefix).bullPrefix);
  const server = createMxServer({ config, sql, queues, logger }, { maxBytes: config.inboundMaxBytes });
  server.on('error', (err) => logger.error({ event: 'MX_SERVER_ERROR', err }, 'MX server error'));
  await new Promise<void>((resolve, reject) => {
    server.listen(config.mxPort, resolve);
    server.server.once('error', reject);
  }).catch((err: unknown) => fatal(logger, err));
  logger.info({ port: config.mxPort }, 'mx listening');
  onShutdown(logger, async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await queues.close();
    await closeRedis(redis);
    await sql.end({ timeout: 5 });
  });
}

main().catch((err: unknown) => fatal(null, err));
