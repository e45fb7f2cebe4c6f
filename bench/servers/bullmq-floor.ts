// The BullMQ floor of bench/webhooks: a bare worker on queue "floor" (prefix BENCH_BULL_PREFIX)
// whose processor does nothing, with the concurrency of Tern's delivery worker
// (BENCH_CONCURRENCY). Prints "ready" once it consumes; SIGTERM closes it.
import { Worker } from 'bullmq';
import { closeRedis, createRedis } from '../../shared/redis.js';

const connection = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bullmq', 'bench-floor');
const worker = new Worker('floor', async () => {}, {
  connection,
  prefix: process.env.BENCH_BULL_PREFIX ?? 'benchfloor',
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 64),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker
    .close()
    .then(() => closeRedis(connection))
    .then(() => process.exit(0));
});
