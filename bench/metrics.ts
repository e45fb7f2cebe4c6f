// bench/metrics (issue 6 item 5).
// (a) Rollup throughput: events recorded in Postgres, then published to the metrics queue and
//     counted by the metrics worker (its own process); a slice is timed from publication until
//     every event is counted. The floor, in alternating slices, writes the same rows with plain
//     batched INSERT … ON CONFLICT DO UPDATE (500 events a statement) into a copy of
//     metrics_daily. Target ≥ 10,000 events/s.
// (b) GET /metrics?days=90 (series), &facet=provider and &facet=key for an org with 2,000
//     dimension combinations a day over 90 days (180,000 metrics_daily rows, seeded through
//     applyDeltas so the totals and facet tables are filled too), among BENCH_METRICS_OTHER_ROWS
//     (default 1,000,000) rows of other orgs; p50 and p99 per query. Target p99 < 25 ms.
import autocannon from 'autocannon';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { setOrgRateLimit } from '../shared/db/orgs.js';
import { applyDeltas, type Delta } from '../shared/db/metrics.js';
import type { Sql } from '../shared/db/pool.js';
import { publishEvents, recordEvents, type NewEvent } from '../shared/events.js';
import { newId } from '../shared/ids.js';
import { createQueues, type Queues } from '../shared/queues.js';
import { closeRedis, createRedis } from '../shared/redis.js';
import { redisKeys } from '../shared/redis-keys.js';
import type { MeasureOptions } from './lib/measure.js';
import { startServer, startWorker, type Child } from './lib/processes.js';
import { alternateRuns, until } from './lib/runs.js';
import { createBenchStack } from './lib/stack.js';

export const description = 'metrics rollup events/s vs plain batched upserts; GET /metrics p50/p99 at 180k rows';

const PROVIDERS = ['gmail', 'outlook', 'yahoo', 'icloud', 'other'];
const TYPES = ['email.sent', 'email.delivered', 'email.delivered', 'email.bounced', 'email.delivery_delayed'] as const;

interface Dims {
  domainId: string;
  provider: string;
  keyId: string;
  templateId: string;
  kind: string;
}

function dimsOf(i: number, domains: string[]): Dims {
  return {
    domainId: domains[i % domains.length]!,
    provider: PROVIDERS[Math.floor(i / domains.length) % PROVIDERS.length]!,
    keyId: `key_bench${i % 20}`,
    templateId: `tpl_bench${i % 10}`,
    kind: ['welcome', 'receipt', 'digest', 'reset'][i % 4]!,
  };
}

async function rollup(sql: Sql, queues: Queues, orgId: string, domains: string[], perSlice: number, pairs: number) {
  await sql`create table floor_daily (like metrics_daily including all)`;
  const makeEvents = (): NewEvent[] =>
    Array.from({ length: perSlice }, (_, i) => {
      const d = dimsOf(i % 200, domains);
      const type = TYPES[i % TYPES.length]!;
      return {
        orgId,
        mode: 'live' as const,
        type,
        dedupeKey: newId('evt'),
        recipient: `r${i}@example.com`,
        ...(type === 'email.bounced' ? { bounceType: 'hard' as const } : {}),
        ...d,
      };
    });
  return await alternateRuns(
    {
      name: 'upserts',
      async slice() {
        const events = makeEvents();
        const day = new Date().toISOString().slice(0, 10);
        const t0 = performance.now();
        for (let i = 0; i < events.length; i += 500) {
          // One statement may not touch a row twice: the batch is summed per row first.
          const rows = new Map<string, { d: NewEvent; sent: number; delivered: number }>();
          for (const e of events.slice(i, i + 500)) {
            const k = [e.domainId, e.provider, e.keyId, e.templateId, e.kind].join('|');
            const r = rows.get(k) ?? { d: e, sent: 0, delivered: 0 };
            if (e.type === 'email.sent') r.sent++;
            else r.delivered++;
            rows.set(k, r);
          }
          const v = [...rows.values()];
          await sql`
            insert into floor_daily (org_id, day, domain_id, provider, key_id, template_id, kind, sent, delivered)
            select ${orgId}, ${day}::date, * from unnest(${v.map((r) => r.d.domainId!)}::text[],
              ${v.map((r) => r.d.provider!)}::text[], ${v.map((r) => r.d.keyId!)}::text[],
              ${v.map((r) => r.d.templateId!)}::text[], ${v.map((r) => r.d.kind!)}::text[],
              ${v.map((r) => r.sent)}::bigint[], ${v.map((r) => r.delivered)}::bigint[])
            on conflict (org_id, day, domain_id, provider, key_id, template_id, kind) do update
            set sent = floor_daily.sent + excluded.sent, delivered = floor_daily.delivered + excluded.delivered`;
        }
        return { items: events.length, seconds: (performance.now() - t0) / 1000 };
      },
    },
    {
      name: 'tern',
      async slice() {
        const ids: string[] = [];
        const events = makeEvents();
        for (let i = 0; i < events.length; i += 1000) {
          ids.push(...(await recordEvents(sql, events.slice(i, i + 1000))).map((e) => e.id));
        }
        const t0 = performance.now();
        for (let i = 0; i < ids.length; i += 1000) await publishEvents(sql, queues, ids.slice(i, i + 1000));
        await until(async () => {
          const [row] = await sql<
            { n: number }[]
          >`select count(*)::int as n from events where metrics_counted_at is null`;
          return row!.n === 0;
        }, 'every event to be counted');
        return { items: ids.length, seconds: (performance.now() - t0) / 1000 };
      },
    },
    pairs,
    'events/s',
  );
}

/** 2,000 combinations a day × 90 days for `orgId`, through applyDeltas. */
async function seedReads(sql: Sql, orgId: string, domains: string[], otherRows: number): Promise<void> {
  const today = Date.now();
  const dayOf = (n: number) => new Date(today - n * 86_400_000).toISOString().slice(0, 10);
  for (let n = 0; n < 90; n++) {
    const deltas: Delta[] = Array.from({ length: 2000 }, (_, i) => ({
      orgId,
      day: dayOf(n),
      ...dimsOf(i, domains),
      counts: { sent: 10 + (i % 7), delivered: 9 + (i % 5), opened: i % 4, bounced_hard: i % 2 },
    }));
    await applyDeltas(sql, deltas);
  }
  // Other orgs: rows of 100 orgs spread over the same 90 days.
  const perOrg = Math.ceil(otherRows / 100);
  for (let o = 0; o < 100; o++) {
    const other = `org_bench_other${o}`;
    for (let i = 0; i < perOrg; i += 5000) {
      const deltas: Delta[] = Array.from({ length: Math.min(5000, perOrg - i) }, (_, k) => {
        const j = i + k;
        return {
          orgId: other,
          day: dayOf(j % 90),
          ...dimsOf(Math.floor(j / 90), [`dom_other${o}a`, `dom_other${o}b`]),
          counts: { sent: 3, delivered: 2 },
        };
      });
      await applyDeltas(sql, deltas);
    }
  }
  await sql`analyze`;
}

async function reads(api: Child, token: string, seconds: number): Promise<void> {
  const paths = [
    '/api/v1/metrics?days=90',
    '/api/v1/metrics?days=90&facet=provider',
    '/api/v1/metrics?days=90&facet=key',
  ];
  for (const path of paths) {
    const url = `${api.url}${path}`;
    const check = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    if (check.status !== 200) throw new Error(`bench/metrics: ${path} answered ${check.status}: ${await check.text()}`);
    const r = await autocannon({
      url,
      connections: 1,
      duration: seconds,
      headers: { authorization: `Bearer ${token}` },
    });
    const bad = r.non2xx + r.errors + r.timeouts;
    console.log(
      `  GET ${path.replace('/api/v1', '').padEnd(32)} p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   (${r.requests.total} requests${bad ? `, ${bad} failed` : ''})`,
    );
  }
}

export async function run(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const bull = createRedis(stack.redisUrl, 'bullmq', 'bench');
  const queues = createQueues(bull, redisKeys(stack.redisPrefix).bullPrefix);
  const children: { stop(): Promise<void> }[] = [];
  try {
    const org = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
    const orgId = org.organization.id;
    // The reads measure the query, not the API key's token bucket.
    await setOrgRateLimit(stack.sql, orgId, { perSecond: 100000, burst: 100000 });
    const domains: string[] = [];
    for (const name of ['a.bench.test', 'b.bench.test', 'c.bench.test', 'd.bench.test']) {
      domains.push((await insertDomain(stack.sql, { orgId, name, status: 'verified' })).id);
    }
    const env = {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    };
    children.push(await startWorker('bench/servers/worker', { ...env, WORKER_QUEUES: 'metrics-rollup' }));
    const perSlice = Math.max(1000, Math.round(measure.sliceSeconds * 10_000));
    console.log(`bench/metrics (a): ${measure.pairs} pairs of ${perSlice}-event slices`);
    const s = await rollup(stack.sql, queues, orgId, domains, perSlice, measure.pairs);
    console.log(`  target (≥ 10,000 events/s): ${s.tern >= 10_000 ? 'meets' : 'misses'}`);

    const otherRows = Number(process.env.BENCH_METRICS_OTHER_ROWS ?? 1_000_000);
    console.log(`bench/metrics (b): seeding 180,000 rows for the org and ${otherRows} for 100 others…`);
    await stack.sql`delete from metrics_daily`;
    await stack.sql`delete from metrics_daily_totals`;
    await stack.sql`delete from metrics_daily_facets`;
    await seedReads(stack.sql, orgId, domains, otherRows);
    const api = await startServer('api/http', env);
    children.push(api);
    await reads(api, org.key.token, measure.sliceSeconds);
    console.log('  target: p99 < 25 ms per query');
  } finally {
    for (const c of children.reverse()) await c.stop();
    await queues.close();
    await closeRedis(bull);
    await stack.drop();
  }
}
