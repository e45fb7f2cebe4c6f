// bench/retention: POST /emails (test key, 1 recipient) while the retention purge deletes
// 1,000,000 expired events, against the same route with the purge idle, in alternating slices
// (idle, purging, idle, purging, …) until the million is gone. The purge runs the worker's
// statements (shared/db/retention.ts) with its default batch (500 rows) and pause (20 ms) in this
// process, on its own connection. Target: the median p99 while purging within 2× the idle one.
import autocannon from 'autocannon';
import { loadavg } from 'node:os';
import postgres from 'postgres';
import { createOrganization } from '../shared/bootstrap.js';
import { purgeEvents } from '../shared/db/retention.js';
import type { MeasureOptions } from './lib/measure.js';
import { median } from './lib/measure.js';
import { startServer, type Child } from './lib/processes.js';
import { createBenchSender, createBenchStack, type BenchStack } from './lib/stack.js';

export const description = 'POST /emails p99 while the retention purge deletes 1,000,000 expired events';

const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000);
const BATCH = 500;
const PAUSE_MS = 20;
const ONE = { from: 'Bench <hi@bench.test>', to: 'delivered@example.com', subject: 'Bench', html: '<p>Hi</p>' };

/** A second organization whose expired events (counted and fanned out) wait for the purge. */
async function seedExpired(stack: BenchStack): Promise<string> {
  const org = await createOrganization(stack.sql, 'tern', { name: 'Expired', adminEmail: 'expired@example.test' });
  const orgId = org.organization.id;
  for (let done = 0; done < ROWS; done += 100_000) {
    const n = Math.min(100_000, ROWS - done);
    await stack.sql`
      insert into events (id, org_id, mode, type, recipient, dedupe_key, created_at, metrics_counted_at, webhooks_fanned_at)
      select 'evt_old' || lpad((${done} + g)::text, 19, '0'), ${orgId}, 'live', 'email.delivered',
        'someone' || g || '@example.com', 'old:' || (${done} + g),
        now() - interval '200 days', now() - interval '200 days', now() - interval '200 days'
      from generate_series(1, ${n}) g`;
  }
  await stack.sql`vacuum analyze events`;
  return orgId;
}

/** Purges in batches until stopped; returns how many rows it deleted. */
function purging(url: string, orgId: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  let stop = false;
  let deleted = 0;
  const done = (async () => {
    while (!stop) {
      const n = await purgeEvents(sql, orgId, 90, BATCH);
      deleted += n;
      if (n < BATCH) break;
      await new Promise((r) => setTimeout(r, PAUSE_MS));
    }
  })();
  return {
    async end(): Promise<number> {
      stop = true;
      await done;
      await sql.end();
      return deleted;
    },
  };
}

async function slice(url: string, headers: Record<string, string>, seconds: number, connections: number) {
  const r = await autocannon({
    url,
    connections,
    duration: seconds,
    headers,
    method: 'POST',
    body: JSON.stringify(ONE),
  });
  return { rps: r.requests.average, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}

export async function run(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const { token } = await createBenchSender(stack, 'bench retention');
    const started = Date.now();
    const expiredOrg = await seedExpired(stack);
    console.log(`bench/retention: seeded ${ROWS} expired events in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const tern = await startServer('api/http', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    });
    children.push(tern);
    const url = `${tern.url}/api/v1/emails`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await slice(url, headers, 1, measure.connections);
    console.log(
      `  ${measure.sliceSeconds} s slices, ${measure.connections} connections, load ${loadavg()[0]!.toFixed(1)}`,
    );
    const idle: number[] = [];
    const busy: number[] = [];
    let purged = 0;
    let failures = 0;
    const t0 = Date.now();
    for (let pair = 1; purged < ROWS && pair <= 200; pair++) {
      const a = await slice(url, headers, measure.sliceSeconds, measure.connections);
      const p = purging(stack.databaseUrl, expiredOrg);
      const b = await slice(url, headers, measure.sliceSeconds, measure.connections);
      const n = await p.end();
      purged += n;
      idle.push(a.p99);
      busy.push(b.p99);
      failures += a.failures + b.failures;
      console.log(
        `  pair ${String(pair).padStart(3)}  idle ${a.rps.toFixed(0).padStart(6)} req/s p99 ${a.p99.toFixed(1).padStart(6)} ms` +
          `   purging ${b.rps.toFixed(0).padStart(6)} req/s p99 ${b.p99.toFixed(1).padStart(6)} ms   deleted ${n} (${purged} total)`,
      );
    }
    const purgeSeconds = (Date.now() - t0) / 2000;
    const ratio = median(busy) / median(idle);
    console.log(
      `  median p99: idle ${median(idle).toFixed(1)} ms, purging ${median(busy).toFixed(1)} ms, ratio ${ratio.toFixed(2)}`,
    );
    console.log(
      `  purged ${purged} rows in about ${purgeSeconds.toFixed(0)} s of purging slices; load ${loadavg()[0]!.toFixed(1)}`,
    );
    console.log(`  target (purging p99 ≤ 2× idle): ${ratio <= 2 ? 'meets' : 'misses'}`);
    if (failures > 0) console.log(`  WARNING: ${failures} answers were not 2xx (figures are not valid)`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
