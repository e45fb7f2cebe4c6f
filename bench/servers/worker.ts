// A Tern worker process for the benchmarks: the queues of WORKER_QUEUES from the registry, as
// `workers/main` runs them, configured from the environment. Prints "ready" once every worker
// is connected; SIGTERM closes them. BENCH_CPU_PROF is handled by the parent (node --cpu-prof).
import { loadConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps } from '../../workers/deps.js';
import { poolSizes, startConsumers, threadQueues } from '../../workers/broadcast-thread.js';
import { registry } from '../../workers/registry.js';

const loaded = loadConfig();
const wanted = loaded.workerQueues ?? registry.map((c) => c.queue);
// As workers/main does: with a broadcast thread, DATABASE_POOL_MAX is split between the threads.
const pools = threadQueues(wanted).length > 0 ? poolSizes(loaded.databasePoolMax) : null;
const config = pools ? { ...loaded, databasePoolMax: pools.main } : loaded;
const base = createWorkerDeps(config, createLogger(config.logLevel, 'bench-worker'));
// BENCH_SQL_COUNT=1: count the statements sent, printed to stderr at exit.
let statements = 0;
const byText = new Map<string, number>();
const deps = process.env.BENCH_SQL_COUNT
  ? {
      ...base,
      sql: createPool(config.databaseUrl, {
        max: config.databasePoolMax,
        application: 'tern-worker',
        onQuery: (text) => {
          statements++;
          const key = text.replace(/\s+/g, ' ').slice(0, 90);
          byText.set(key, (byText.get(key) ?? 0) + 1);
        },
      }),
    }
  : base;
// As workers/main runs them: the broadcast stream on a thread of its own when both streams are here.
const consumers = await startConsumers(deps, wanted, deps.logger, pools?.thread);
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void consumers
    .close()
    .then(() => deps.close())
    .then(() => (deps === base ? undefined : deps.sql.end()))
    .then(() => {
      if (!process.env.BENCH_SQL_COUNT) return;
      const top = [...byText].sort((a, b) => b[1] - a[1]).slice(0, 25);
      process.stderr.write(`bench worker: ${statements} SQL statements\n`);
      for (const [text, n] of top) process.stderr.write(`${String(n).padStart(8)}  ${text}\n`);
    })
    .then(() => process.exit(0));
});
