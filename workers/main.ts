// Entry of the `worker` process: consumes every BullMQ queue of the registry, or only those named
// in WORKER_QUEUES. A process that delivers both streams runs the broadcast stream's consumers on
// a thread of their own (workers/broadcast-thread.ts). On SIGTERM each worker stops taking jobs and
// finishes the ones it holds (worker.close()), the thread likewise, then Redis and Postgres are
// closed.
import { createLogger } from '../shared/logger.js';
import { fatal, loadConfigOrExit, onShutdown } from '../shared/shutdown.js';
import { poolSizes, startConsumers, threadQueues } from './broadcast-thread.js';
import { createWorkerDeps } from './deps.js';
import { registry } from './registry.js';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, 'worker');
  const known = registry.map((c) => c.queue);
  const wanted = config.workerQueues ?? known;
  const unknown = wanted.filter((q) => !known.includes(q));
  if (unknown.length > 0) {
    fatal(
      logger,
      new Error(`WORKER_QUEUES: unknown queue(s) ${unknown.join(', ')}; known: ${known.join(', ') || 'none'}`),
    );
  }
  // A stray rejection or throw from a client library (a Postgres or Redis connection dying at
  // the wrong moment) is logged, not fatal: the work lives in Postgres and leases, and every
  // consumer retries or sweeps what such a fault interrupted.
  process.on('unhandledRejection', (err) =>
    logger.error({ event: 'WORKER_UNHANDLED_REJECTION', err }, 'unhandled rejection (kept running)'),
  );
  process.on('uncaughtException', (err) =>
    logger.error({ event: 'WORKER_UNCAUGHT_EXCEPTION', err }, 'uncaught exception (kept running)'),
  );
  // With a broadcast thread, DATABASE_POOL_MAX is split between the two threads' pools.
  const pools = threadQueues(wanted).length > 0 ? poolSizes(config.databasePoolMax) : null;
  const deps = createWorkerDeps(pools ? { ...config, databasePoolMax: pools.main } : config, logger);
  const consumers = await startConsumers(deps, wanted, logger, pools?.thread);
  logger.info({ queues: wanted }, 'worker started');
  onShutdown(logger, config, async () => {
    await consumers.close();
    await deps.close();
  });
}

main().catch((err: unknown) => fatal(null, err));
