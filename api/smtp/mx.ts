// Entry of the `mx` process: the inbound MX for reply.<domain>, the bounce domain
// bounces.<domain> and the domains with inbound routes (DESIGN §10, §16). It stores and enqueues; the inbound worker parses. On SIGTERM
// it stops accepting connections, lets open sessions finish, then closes Redis and Postgres.
import { readFileSync } from 'node:fs';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logger.js';
import { PromRecorder } from '../../shared/prom/recorder.js';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { isClusterUrl } from '../../shared/redis-url.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { fatal, loadConfigOrExit, onShutdown } from '../../shared/shutdown.js';
import { createMxServer } from './mx-server.js';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, 'mx');
  const sql = createPool(config.databaseUrl, {
    max: config.databasePoolMax,
    application: 'tern-mx',
    pooler: config.databasePooler,
  });
  const redis = createRedis(config.redisUrl, 'api', 'tern-mx');
  const keys = redisKeys(config.redisPrefix, { cluster: isClusterUrl(config.redisUrl) });
  const queues = createQueues(redis, keys.bullPrefix);
  const prom = new PromRecorder(redis, keys.prom, logger).start();
  let tls: { key: Buffer; cert: Buffer } | undefined;
  try {
    if (config.mxTlsCert && config.mxTlsKey) {
      tls = { cert: readFileSync(config.mxTlsCert), key: readFileSync(config.mxTlsKey) };
    }
  } catch (err) {
    fatal(logger, err);
  }
  const server = createMxServer({ config, sql, queues, logger, prom }, { maxBytes: config.inboundMaxBytes, tls });
  server.on('error', (err) => logger.error({ event: 'MX_SERVER_ERROR', err }, 'MX server error'));
  await new Promise<void>((resolve, reject) => {
    server.listen(config.mxPort, resolve);
    server.server.once('error', reject);
  }).catch((err: unknown) => fatal(logger, err));
  logger.info({ port: config.mxPort }, 'mx listening');
  onShutdown(logger, config, async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await prom.close();
    await queues.close();
    await closeRedis(redis);
    await sql.end({ timeout: 5 });
  });
}

main().catch((err: unknown) => fatal(null, err));
