// bench/import (issue 17 item 1): POST /contacts/imports of BENCH_IMPORT_ROWS (default
// 1,000,000) rows, from the first byte of the upload to `completed`, through a real web process
// and a real worker process (the `contact-bulk` queue). Target: < 120 s on the 2-core machine.
// Then POST /emails at a steady BENCH_IMPORT_RATE (default 100 requests/s, a test key) in
// alternating slices: idle, then while an import of BENCH_IMPORT_SLICE_ROWS (default 200,000)
// rows runs. Target: the p99 under import within 2× of the idle p99. Last, the send-time
// suppression check with 10,000 rules against none (µs per address). Figures only.
import autocannon from 'autocannon';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { setOrgRateLimit } from '../shared/db/orgs.js';
import type { Sql } from '../shared/db/pool.js';
import type { MeasureOptions } from './lib/measure.js';
import { median } from './lib/measure.js';
import { startServer, startWorker, type Child } from './lib/processes.js';
import { until } from './lib/runs.js';
import { createBenchSender, createBenchStack } from './lib/stack.js';
import { loadavg } from 'node:os';

export const description =
  'contact import of 1,000,000 rows; POST /emails p99 idle vs during an import; suppression rules';

function csvOf(rows: number, tag: string): Buffer {
  const lines = ['email,first_name,last_name,plan,seats'];
  for (let i = 0; i < rows; i++)
    lines.push(`${tag}${i}@example${i % 1000}.com,First${i},Last${i},${i % 3 ? 'free' : 'pro'},${i % 50}`);
  return Buffer.from(lines.join('\n') + '\n');
}

const MAPPING = JSON.stringify({
  email: 'email',
  first_name: 'first_name',
  last_name: 'last_name',
  properties: { plan: 'plan', seats: { column: 'seats', type: 'number' } },
});

async function importOnce(api: Child, token: string, file: Buffer): Promise<{ seconds: number; status: string }> {
  const t0 = performance.now();
  const res = await fetch(`${api.url}/api/v1/contacts/imports?mapping=${encodeURIComponent(MAPPING)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: file,
  });
  const created = (await res.json()) as { id: string; status: string };
  if (res.status !== 202) throw new Error(`bench/import: upload answered ${res.status}: ${JSON.stringify(created)}`);
  let last = created;
  await until(
    async () => {
      const r = await fetch(`${api.url}/api/v1/contacts/imports/${created.id}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      last = (await r.json()) as typeof last;
      return last.status === 'completed' || last.status === 'failed';
    },
    'the import to finish',
    600_000,
    200,
  );
  return { seconds: (performance.now() - t0) / 1000, status: last.status };
}

async function sendSlice(api: Child, token: string, seconds: number, rate: number) {
  const r = await autocannon({
    url: `${api.url}/api/v1/emails`,
    method: 'POST',
    connections: 10,
    overallRate: rate,
    duration: seconds,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'hi@bench.test', to: 'delivered@example.com', subject: 'Bench', html: '<p>Hi</p>' }),
  });
  return { p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}

/** µs per address of the send-time check (suppression_reason) for `n` addresses. */
async function checkCost(sql: Sql, orgId: string, n: number): Promise<number> {
  const t0 = performance.now();
  await sql`
    select count(*) from generate_series(1, ${n}) i
    where suppression_reason(${orgId}, null, 'user' || i || '@example' || (i % 100) || '.com') is not null`;
  return ((performance.now() - t0) * 1000) / n;
}

async function rules(sql: Sql, orgId: string): Promise<void> {
  const none = median([await checkCost(sql, orgId, 20_000), await checkCost(sql, orgId, 20_000)]);
  await sql`
    insert into suppressions (id, org_id, pattern, pattern_key, pattern_like, reason)
    select 'sup_bench_d' || i, ${orgId}, '*@blocked' || i || '.com', 'blocked' || i || '.com|', '%@blocked' || i || '.com', 'manual'
    from generate_series(1, 9000) i
    union all
    select 'sup_bench_l' || i, ${orgId}, 'list' || i || '-*@*', '*|lis', 'list' || i || '-%@%', 'manual'
    from generate_series(1, 1000) i`;
  await sql`analyze suppressions`;
  const many = median([await checkCost(sql, orgId, 20_000), await checkCost(sql, orgId, 20_000)]);
  console.log(
    `  suppression check per address: ${none.toFixed(1)} µs with no rule, ${many.toFixed(1)} µs with 10,000 rules`,
  );
}

export async function run(measure: MeasureOptions): Promise<void> {
  const rows = Number(process.env.BENCH_IMPORT_ROWS ?? 1_000_000);
  const sliceRows = Number(process.env.BENCH_IMPORT_SLICE_ROWS ?? 200_000);
  const rate = Number(process.env.BENCH_IMPORT_RATE ?? 100);
  const stack = await createBenchStack();
  const children: { stop(): Promise<void> }[] = [];
  try {
    const sender = await createBenchSender(stack, 'bench import sender');
    const org = await createOrganization(stack.sql, 'tern', { name: 'Importer', adminEmail: 'imp@example.test' });
    await setOrgRateLimit(stack.sql, org.organization.id, { perSecond: 100000, burst: 100000 });
    await insertDomain(stack.sql, { orgId: org.organization.id, name: 'import.bench.test', status: 'verified' });
    const env = {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    };
    const api = await startServer('api/http', env);
    children.push(api);
    children.push(await startWorker('bench/servers/worker', { ...env, WORKER_QUEUES: 'contact-bulk' }));

    const file = csvOf(rows, 'a');
    console.log(
      `bench/import (a): ${rows} rows, ${(file.length / 1048576).toFixed(1)} MiB, load average ${loadavg()[0]!.toFixed(1)}`,
    );
    const big = await importOnce(api, org.key.token, file);
    console.log(
      `  ${big.status} in ${big.seconds.toFixed(1)} s (${(rows / big.seconds).toFixed(0)} rows/s), load average ${loadavg()[0]!.toFixed(1)}   target < 120 s: ${big.status === 'completed' && big.seconds < 120 ? 'meets' : 'misses'}`,
    );

    console.log(
      `bench/import (b): POST /emails at ${rate}/s, ${measure.pairs} pairs of ${measure.sliceSeconds} s slices: idle, then during a ${sliceRows}-row import`,
    );
    const idle: number[] = [];
    const loaded: number[] = [];
    await sendSlice(api, sender.token, 1, rate);
    for (let i = 0; i < measure.pairs; i++) {
      const a = await sendSlice(api, sender.token, measure.sliceSeconds, rate);
      const running = importOnce(api, org.key.token, csvOf(sliceRows, `s${i}-`));
      // The slice starts once the upload is under way.
      await new Promise((r) => setTimeout(r, 500));
      const b = await sendSlice(api, sender.token, measure.sliceSeconds, rate);
      const imp = await running;
      idle.push(a.p99);
      loaded.push(b.p99);
      const bad = a.failures + b.failures ? `   (${a.failures + b.failures} failed)` : '';
      console.log(
        `  pair ${i + 1}  idle p50 ${a.p50.toFixed(1)} ms p99 ${a.p99.toFixed(1)} ms   import p50 ${b.p50.toFixed(1)} ms p99 ${b.p99.toFixed(1)} ms   (import ${imp.seconds.toFixed(1)} s)   load ${loadavg()[0]!.toFixed(1)}${bad}`,
      );
    }
    const ratio = median(loaded) / Math.max(0.1, median(idle));
    console.log(
      `  median p99: idle ${median(idle).toFixed(1)} ms, during import ${median(loaded).toFixed(1)} ms, ratio ${ratio.toFixed(2)}   target ≤ 2: ${ratio <= 2 ? 'meets' : 'misses'}`,
    );

    console.log('bench/import (c): send-time suppression check');
    await rules(stack.sql, org.organization.id);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
