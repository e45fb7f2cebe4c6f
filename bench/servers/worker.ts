// A Tern worker process for the benchmarks: the queues of WORKER_QUEUES from the registry, as
// `workers/main` runs them, configured from the environment. Prints "ready" once every worker
// is connected; SIGTERM closes them. BENCH_CPU_PROF is handled by the parent (node --cpu-prof).
import type { Worker } from 'bullmq';
import { loadConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps } from '../../workers/deps.js';
import { registry } from '../../workers/registry.js';

const config = loadConfig();
const base = createWorkerDeps(config, createLogger(config.logLevel, 'bench-worker'));
// BENCH_SQL_COUNT=1: count the statements sent, printed to stderr at exit.
let statements = 0;
const deps = process.env.BENCH_SQL_COUNT
  ? { ...base, sql: createPool(config.databaseUrl, { application: 'tern-worker', onQuery: () => statements++ }) }
  : base;
const wanted = config.workerQueues ?? registry.map((c) => c.queue);
const workers: Worker[] = [];
for (const consumer of registry.filter((c) => wanted.includes(c.queue))) workers.push(await consumer.start(deps));
await Promise.all(workers.map((w) => w.waitUntilReady()));
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void Promise.all(workers.map((w) => w.close()))
    .then(() => deps.close())
    .then(() => (deps === base ? undefined : deps.sql.end()))
    .then(() => process.env.BENCH_SQL_COUNT && process.stderr.write(`bench worker: ${statements} SQL statements\n`))
    .then(() => process.exit(0));
});
