// Entry of the broadcast stream's thread (workers/broadcast-thread.ts starts it from the worker
// process): the consumers named in workerData.queues (delivery-broadcast, broadcast) with
// dependencies of their own (a Postgres pool, Redis connections), so that broadcast mail's work
// never runs on the event loop that delivers transactional mail. The main thread tells it when
// transactional mail holds broadcast mail to its share ({type: 'share', limited}) and when to
// stop ({type: 'close'}: the consumers finish the jobs they hold, the connections close, and the
// thread answers {type: 'closed'} and ends).
import type { Worker } from 'bullmq';
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createWorkerDeps } from './deps.js';
import { processOf } from './delivery/process-shared.js';
import { registry } from './registry.js';

export type ToThread = { type: 'share'; limited: boolean } | { type: 'close' };
export type FromThread = { type: 'ready' } | { type: 'closed' };

const port = parentPort!;
const send = (m: FromThread) => port.postMessage(m);
const { queues, poolMax } = workerData as { queues: string[]; poolMax: number };
// The thread's share of the process's DATABASE_POOL_MAX (workers/broadcast-thread.ts poolSizes).
const config = { ...loadConfig(), databasePoolMax: poolMax };
const logger = createLogger(config.logLevel, 'worker').child({ thread: 'broadcast' });
// As on the main thread (workers/main.ts): a stray rejection from a client library is logged.
process.on('unhandledRejection', (err) =>
  logger.error({ event: 'WORKER_UNHANDLED_REJECTION', err }, 'unhandled rejection (kept running)'),
);
process.on('uncaughtException', (err) =>
  logger.error({ event: 'WORKER_UNCAUGHT_EXCEPTION', err }, 'uncaught exception (kept running)'),
);
const deps = createWorkerDeps(config, logger, 'tern-worker-broadcast');
const workers: Worker[] = [];
for (const consumer of registry.filter((c) => queues.includes(c.queue))) workers.push(await consumer.start(deps));
let limited = false;
port.on('message', (m: ToThread) => {
  if (m.type === 'share') {
    limited = m.limited;
    processOf(deps)?.share.setRemote(limited);
  } else {
    void Promise.all(workers.map((w) => w.close()))
      .then(() => deps.close())
      .finally(() => {
        send({ type: 'closed' });
        port.close();
      });
  }
});
processOf(deps)?.share.setRemote(limited);
await Promise.all(workers.map((w) => w.waitUntilReady()));
send({ type: 'ready' });
