// bench/webhooks (issue 5 item 8): webhook deliveries per second and event → 2xx latency.
// Three sides in alternating rounds (undici, BullMQ, Tern; A B C A B C …), each a fixed number
// of items, so a busy machine slows them alike; the figures are medians.
//  - floor "undici": bare undici POSTs, each body built and HMAC-signed, `CONCURRENCY` in flight
//    through one keep-alive Agent, to the receiver child;
//  - floor "bullmq": bare BullMQ add (addBulk of 500) → process (no-op, a worker child with
//    concurrency `CONCURRENCY`);
//  - Tern: events recorded and published (batches of 500, as a delivery worker does) → the worker
//    child (`WORKER_QUEUES=webhook-fanout,webhook-delivery`, the registry's consumers with their
//    defaults) fans out, signs and POSTs → 2xx at the same receiver, which verifies every signature.
// Then idle latency: events inserted one at a time, spaced, each waited for at the receiver.
// Items per slice: BENCH_WEBHOOK_N (default 1000 per second of --slice); idle events:
// BENCH_WEBHOOK_IDLE (default 50). BENCH_CPU_PROF=<dir> profiles the worker children;
// BENCH_SQL_COUNT=1 makes the Tern worker print its SQL statement count at exit.
// Targets: Tern ≥ 1,500 deliveries/s (about 0.3 of the BullMQ floor), idle p50 < 50 ms.
import { Queue } from 'bullmq';
import { Agent, request } from 'undici';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { insertWebhook } from '../shared/db/webhooks.js';
import { publishEvents, recordEvents } from '../shared/events.js';
import { newId } from '../shared/ids.js';
import { createQueues, type Queues } from '../shared/queues.js';
import { closeRedis, createRedis } from '../shared/redis.js';
import { redisKeys } from '../shared/redis-keys.js';
import { secretBox } from '../shared/secrets.js';
import { sign } from '../shared/webhooks/signing.js';
import { newSigningSecret } from '../shared/webhooks/rules.js';
import { median, type MeasureOptions } from './lib/measure.js';
import { BENCH_SECRET_KEY, startServer, startWorker, type Child } from './lib/processes.js';
import { percentile, until, type RunResult, type Side } from './lib/runs.js';
import { createBenchStack, type BenchStack } from './lib/stack.js';

export const description = 'event → webhook 2xx vs bare undici+HMAC POSTs and a bare BullMQ add → process loop';

/** In-flight deliveries on every side: Tern's delivery worker default concurrency. */
const CONCURRENCY = 64;
const BATCH = 500;

interface Stats {
  received: number;
  refused: number;
  latencies?: number[];
}

class Receiver {
  private readonly agent = new Agent({ connections: 1 });
  constructor(readonly url: string) {}
  async stats(opts: { reset?: boolean; latencies?: boolean } = {}): Promise<Stats> {
    const q = `${opts.reset ? 'reset=1&' : ''}${opts.latencies ? 'latencies=1' : ''}`;
    const res = await request(`${this.url}/stats?${q}`, { dispatcher: this.agent });
    return (await res.body.json()) as Stats;
  }
  close = () => this.agent.close();
}

async function seed(stack: BenchStack, hookUrl: string, secret: string) {
  const created = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
  const orgId = created.organization.id;
  const domain = await insertDomain(stack.sql, { orgId, name: 'bench.test', status: 'verified' });
  const box = secretBox({ secretKey: process.env.SECRET_KEY ?? BENCH_SECRET_KEY });
  await insertWebhook(stack.sql, box, { orgId, url: hookUrl, events: ['email.delivered'], description: null, secret });
  const emailId = newId('em');
  await stack.sql`insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, subject, message_id)
    values (${emailId}, ${orgId}, ${domain.id}, 'live', 'Bench <hello@bench.test>', 'hello@bench.test',
      ${['someone@example.net']}, 'Your order has shipped', ${emailId})`;
  return { orgId, emailId };
}

/** The body Tern sends for these events, built afresh per POST as a worker would sign it. */
function floorBody(emailId: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: 'email.delivered',
      created_at: new Date().toISOString(),
      data: {
        email_id: emailId,
        from: 'Bench <hello@bench.test>',
        to: ['someone@example.net'],
        subject: 'Your order has shipped',
        recipient: 'someone@example.net',
        kind: null,
        tags: null,
      },
    }),
  );
}

function undiciSide(
  receiver: Receiver,
  hookUrl: string,
  secret: string,
  emailId: string,
  n: number,
): Side & { close(): Promise<void> } {
  const agent = new Agent({ keepAliveTimeout: 4000 });
  return {
    name: 'undici',
    close: () => agent.close(),
    async slice() {
      await receiver.stats({ reset: true });
      let next = 0;
      let ok = 0;
      const started = performance.now();
      const lane = async () => {
        while (next++ < n) {
          const body = floorBody(emailId);
          const res = await request(hookUrl, {
            method: 'POST',
            body,
            dispatcher: agent,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'tern-webhooks/1',
              'tern-signature': sign(body, secret),
              'tern-delivery-id': newId('dlv'),
              'tern-event-type': 'email.delivered',
            },
          });
          await res.body.dump();
          if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      const seconds = (performance.now() - started) / 1000;
      const s = await receiver.stats({ latencies: true });
      return { items: ok, seconds, latencies: s.latencies ?? [] };
    },
  };
}

function bullmqSide(redisUrl: string, prefix: string, n: number): Side & { close(): Promise<void> } {
  const conn = createRedis(redisUrl, 'bullmq', 'bench-floor-producer');
  const queue = new Queue('floor', { connection: conn, prefix });
  return {
    name: 'bullmq',
    async slice() {
      const started = performance.now();
      for (let i = 0; i < n; i += BATCH) {
        await queue.addBulk(
          Array.from({ length: Math.min(BATCH, n - i) }, () => ({
            name: 'deliver',
            data: { deliveryId: newId('dlv') },
            opts: { removeOnComplete: true, removeOnFail: true },
          })),
        );
      }
      await until(async () => {
        const c = await queue.getJobCounts('wait', 'active', 'prioritized', 'delayed');
        return Object.values(c).every((x) => x === 0);
      }, 'the BullMQ floor');
      return { items: n, seconds: (performance.now() - started) / 1000 };
    },
    async close() {
      await queue.close();
      await closeRedis(conn);
    },
  };
}

function ternSide(stack: BenchStack, queues: Queues, receiver: Receiver, seeded: Seeded, n: number): Side {
  return {
    name: 'tern',
    async slice() {
      await receiver.stats({ reset: true });
      const started = performance.now();
      for (let i = 0; i < n; i += BATCH) await emit(stack, queues, seeded, Math.min(BATCH, n - i));
      let s: Stats = { received: 0, refused: 0 };
      await until(async () => {
        s = await receiver.stats();
        return s.received + s.refused >= n;
      }, 'Tern deliveries');
      const seconds = (performance.now() - started) / 1000;
      s = await receiver.stats({ latencies: true });
      if (s.refused > 0) console.log(`  WARNING: the receiver refused ${s.refused} Tern signatures`);
      return { items: s.received, seconds, latencies: s.latencies ?? [] };
    },
  };
}

type Seeded = Awaited<ReturnType<typeof seed>>;

async function emit(stack: BenchStack, queues: Queues, seeded: Seeded, count: number): Promise<void> {
  const rows = await recordEvents(
    stack.sql,
    Array.from({ length: count }, () => ({
      orgId: seeded.orgId,
      mode: 'live' as const,
      type: 'email.delivered' as const,
      dedupeKey: newId('evt'),
      emailId: seeded.emailId,
      recipient: 'someone@example.net',
    })),
  );
  await publishEvents(
    stack.sql,
    queues,
    rows.map((r) => r.id),
  );
}

/** Events one at a time, each waited for at the receiver, then a pause: latency with no queueing. */
async function idleLatency(stack: BenchStack, queues: Queues, receiver: Receiver, seeded: Seeded, k: number) {
  const latencies: number[] = [];
  for (let i = 0; i < k; i++) {
    await receiver.stats({ reset: true });
    await emit(stack, queues, seeded, 1);
    await until(async () => (await receiver.stats()).received >= 1, 'an idle delivery', 30_000, 2);
    latencies.push(...((await receiver.stats({ latencies: true })).latencies ?? []));
    await new Promise((r) => setTimeout(r, 100));
  }
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

const rate = (r: RunResult) => (r.seconds > 0 ? r.items / r.seconds : 0);

function row(name: string, r: RunResult): string {
  const lat = r.latencies?.length
    ? `   p50 ${percentile(r.latencies, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(r.latencies, 99).toFixed(1).padStart(7)} ms`
    : '';
  return `${name.padEnd(7)} ${rate(r).toFixed(0).padStart(7)} /s${lat}`;
}

/** One warm-up slice per side, then `pairs` rounds of one slice per side, in turn. */
async function rounds(sides: Side[], pairs: number): Promise<RunResult[][]> {
  for (const s of sides) await s.slice(0);
  const results: RunResult[][] = sides.map(() => []);
  for (let i = 1; i <= pairs; i++) {
    for (const [k, s] of sides.entries()) {
      const r = await s.slice(i);
      results[k]!.push(r);
      console.log(`  ${k === 0 ? `round ${i}`.padEnd(8) : ' '.repeat(8)}  ${row(s.name, r)}`);
    }
  }
  return results;
}

function report(results: RunResult[][], idle: { p50: number; p99: number }): void {
  const [u, b, t] = results as [RunResult[], RunResult[], RunResult[]];
  const med = (rs: RunResult[]) => median(rs.map(rate));
  const ratio = (floor: RunResult[]) => median(t.map((x, i) => (rate(floor[i]!) > 0 ? rate(x) / rate(floor[i]!) : 0)));
  const lat = t.flatMap((r) => r.latencies ?? []);
  const f = (x: number) => x.toFixed(0).padStart(7);
  console.log(`  median  undici+HMAC POSTs   ${f(med(u))} /s`);
  console.log(`          BullMQ add→process  ${f(med(b))} /s`);
  console.log(`          Tern event→2xx      ${f(med(t))} deliveries/s   (target ≥ 1500)`);
  console.log(`  Tern / undici floor  ${ratio(u).toFixed(2)}   (median of per-round ratios)`);
  console.log(`  Tern / BullMQ floor  ${ratio(b).toFixed(2)}   (target ≈ 0.3)`);
  console.log(
    `  event→delivery under load  p50 ${percentile(lat, 50).toFixed(1)} ms   p99 ${percentile(lat, 99).toFixed(1)} ms`,
  );
  console.log(
    `  event→delivery idle        p50 ${idle.p50.toFixed(1)} ms   p99 ${idle.p99.toFixed(1)} ms   (target p50 < 50 ms)`,
  );
}

function counts(measure: MeasureOptions): { n: number; idle: number } {
  const n = Number(process.env.BENCH_WEBHOOK_N ?? Math.round(measure.sliceSeconds * 1000));
  const idle = Number(process.env.BENCH_WEBHOOK_IDLE ?? 50);
  if (!(n >= 1 && idle >= 1)) throw new Error('bench/webhooks: BENCH_WEBHOOK_N and BENCH_WEBHOOK_IDLE must be ≥ 1');
  return { n: Math.round(n), idle: Math.round(idle) };
}

export async function run(measure: MeasureOptions): Promise<void> {
  const { n, idle } = counts(measure);
  const stack = await createBenchStack();
  const children: Omit<Child, 'port' | 'url'>[] = [];
  const secret = newSigningSecret();
  const bull = createRedis(stack.redisUrl, 'bullmq', 'bench');
  const queues = createQueues(bull, redisKeys(stack.redisPrefix).bullPrefix);
  let floorQueue: ReturnType<typeof bullmqSide> | null = null;
  let floorHttp: ReturnType<typeof undiciSide> | null = null;
  let receiver: Receiver | null = null;
  try {
    const sink = await startServer('bench/servers/webhook-receiver', { BENCH_WEBHOOK_SECRET: secret });
    children.push(sink);
    receiver = new Receiver(sink.url);
    const hookUrl = `${sink.url}/hook`;
    const seeded = await seed(stack, hookUrl, secret);
    const floorPrefix = `${stack.redisPrefix}:floor`;
    children.push(
      await startWorker('bench/servers/bullmq-floor', {
        REDIS_URL: stack.redisUrl,
        BENCH_BULL_PREFIX: floorPrefix,
        BENCH_CONCURRENCY: String(CONCURRENCY),
      }),
    );
    children.push(
      await startWorker('bench/servers/worker', {
        DATABASE_URL: stack.databaseUrl,
        REDIS_URL: stack.redisUrl,
        REDIS_PREFIX: stack.redisPrefix,
        WORKER_QUEUES: 'webhook-fanout,webhook-delivery',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
      }),
    );
    floorQueue = bullmqSide(stack.redisUrl, floorPrefix, n);
    floorHttp = undiciSide(receiver, hookUrl, secret, seeded.emailId, n);
    console.log(
      `bench/webhooks: ${measure.pairs} rounds of ${n} items per side, ${CONCURRENCY} in flight; then ${idle} idle events`,
    );
    const results = await rounds([floorHttp, floorQueue, ternSide(stack, queues, receiver, seeded, n)], measure.pairs);
    const idleLat = await idleLatency(stack, queues, receiver, seeded, idle);
    report(results, idleLat);
    const [d] = await stack.sql<{ n: number; ok: number; attempts: number }[]>`
      select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok,
        coalesce(sum(attempts), 0)::int as attempts from webhook_deliveries`;
    console.log(`  Tern stored ${d!.n} deliveries: ${d!.ok} succeeded, ${d!.attempts} attempts`);
  } finally {
    await floorQueue?.close();
    await floorHttp?.close();
    await receiver?.close();
    await queues.close();
    await closeRedis(bull);
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
