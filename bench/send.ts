// bench/send: accepted emails/s of POST /emails (1 recipient, small HTML) and POST /emails/batch
// (100 per request) with a test key, each against the bare Koa floor reading and parsing the same
// JSON body. Test mode goes through every step of a send (auth, rate limit, validation, the
// Postgres transaction, the BullMQ job) except the network. Targets on the 2-core machine:
// POST /emails ≥ 1,000 emails/s with p99 < 50 ms at 50 connections; batch ≥ 10,000 emails/s.
// A second, like-for-like floor (bench/servers/send-floor: one Postgres insert and one BullMQ
// job per request) is measured against POST /emails too: target ≥ 0.5 × it, p99 < 50 ms.
import { alternate, type MeasureOptions } from './lib/measure.js';
import { startServer, type Child } from './lib/processes.js';
import { createBenchSender, createBenchStack } from './lib/stack.js';

export const description = 'POST /emails and POST /emails/batch (test key) vs a bare Koa JSON route';

const ONE = { from: 'Bench <hi@bench.test>', to: 'delivered@example.com', subject: 'Bench', html: '<p>Hi</p>' };
const BATCH = Array.from({ length: 100 }, (_, i) => ({ ...ONE, to: `delivered+${i}@example.com` }));

export async function run(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const { token } = await createBenchSender(stack, 'bench send');
    const floor = await startServer('bench/servers/floor', {});
    children.push(floor);
    await stack.sql`create table floor_emails (id text primary key, body jsonb not null, created_at timestamptz not null default now())`;
    const durable = await startServer('bench/servers/send-floor', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      BENCH_BULL_PREFIX: `${stack.redisPrefix}:floorbull`,
    });
    children.push(durable);
    const tern = await startServer('api/http', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    });
    children.push(tern);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (const [path, body] of [
      ['/api/v1/emails', ONE],
      ['/api/v1/emails/batch', BATCH],
    ] as const) {
      const check = await fetch(`${tern.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (check.status !== 200)
        throw new Error(`bench/send: POST ${path} answered ${check.status}: ${await check.text()}`);
    }
    console.log(
      `bench/send: ${measure.pairs} pairs of ${measure.sliceSeconds} s slices, ${measure.connections} connections`,
    );

    console.log('POST /emails (1 recipient)');
    const one = JSON.stringify(ONE);
    const single = await alternate(
      {
        name: 'koa',
        url: `${floor.url}/floor`,
        headers,
        body: one,
        itemsPerRequest: 1,
        item: 'emails',
        pid: floor.pid,
      },
      {
        name: 'tern',
        url: `${tern.url}/api/v1/emails`,
        headers,
        body: one,
        itemsPerRequest: 1,
        item: 'emails',
        pid: tern.pid,
      },
      measure,
    );
    const singleOk = single.tern.rps >= 1000 && single.tern.p99 < 50;
    console.log(`  target (≥ 1000 emails/s, p99 < 50 ms): ${singleOk ? 'meets' : 'misses'}`);

    console.log('POST /emails vs the like-for-like floor (Koa + one Postgres insert + one BullMQ job)');
    const like = await alternate(
      {
        name: 'pg+bull',
        url: `${durable.url}/floor`,
        headers,
        body: one,
        itemsPerRequest: 1,
        item: 'emails',
        pid: durable.pid,
      },
      {
        name: 'tern',
        url: `${tern.url}/api/v1/emails`,
        headers,
        body: one,
        itemsPerRequest: 1,
        item: 'emails',
        pid: tern.pid,
      },
      measure,
    );
    const likeOk = like.ratio >= 0.5 && like.tern.p99 < 50;
    console.log(
      `  target (≥ 0.5 × the like-for-like floor, p99 < 50 ms): ${likeOk ? 'meets' : 'misses'} (ratio ${like.ratio.toFixed(2)}, p99 ${like.tern.p99.toFixed(1)} ms)`,
    );

    console.log('POST /emails/batch (100 per request)');
    const batch = JSON.stringify(BATCH);
    const many = await alternate(
      {
        name: 'koa',
        url: `${floor.url}/floor`,
        headers,
        body: batch,
        itemsPerRequest: 100,
        item: 'emails',
        pid: floor.pid,
      },
      {
        name: 'tern',
        url: `${tern.url}/api/v1/emails/batch`,
        headers,
        body: batch,
        itemsPerRequest: 100,
        item: 'emails',
        pid: tern.pid,
      },
      measure,
    );
    console.log(`  target (≥ 10000 emails/s): ${many.tern.rps * 100 >= 10000 ? 'meets' : 'misses'}`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
