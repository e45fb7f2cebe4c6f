// Webhook throughput and latency, printed (never asserted). Three measurements in one run:
//  1. floor: bare undici POSTs, each HMAC-signed, to a local receiver;
//  2. floor: a bare BullMQ add → process loop (no-op processor);
//  3. Tern: events recorded and published → fan-out → delivery → 2xx at the receiver.
// Prints deliveries/s, event→delivery p50/p99 (and idle p50, one event at a time) and Tern's
// ratio to each floor. Targets: ≥ 1,500 deliveries/s, idle p50 < 50 ms.
// Run: `npm run bench -- webhooks` (BENCH_N=events, default 3000; needs Postgres at
// BENCH_DATABASE_URL's server and Redis at BENCH_REDIS_URL; a scratch database is created and
// dropped). Not yet on alternating slices: the three measurements run once each, in order.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import postgres from 'postgres';
import { Agent, request } from 'undici';
import { createOrganization } from '../shared/bootstrap.js';
import { loadConfig } from '../shared/config.js';
import { insertDomain } from '../shared/db/domains.js';
import { migrate } from '../shared/db/migrate.js';
import { createPool } from '../shared/db/pool.js';
import { insertWebhook } from '../shared/db/webhooks.js';
import { publishEvents, recordEvents } from '../shared/events.js';
import { newId } from '../shared/ids.js';
import { createLogger } from '../shared/logger.js';
import { closeRedis, createRedis } from '../shared/redis.js';
import { sign } from '../shared/webhook-signing.js';
import { newSigningSecret } from '../shared/webhooks.js';
import { createWorkerDeps } from '../workers/deps.js';
import { startWebhookDelivery } from '../workers/webhook-delivery.js';
import { startWebhookFanout } from '../workers/webhook-fanout.js';

const N = Number(process.env.BENCH_N ?? 3000);
const CONCURRENCY = 64;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function startSink(onRequest: (headers: Record<string, unknown>) => void) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      onRequest(req.headers);
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

async function floorUndici(): Promise<number> {
  const sink = await startSink(() => {});
  const agent = new Agent({ connections: CONCURRENCY });
  const body = Buffer.from(JSON.stringify({ type: 'email.delivered', created_at: new Date().toISOString(), data: {} }));
  const secret = newSigningSecret();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < N) {
        const res = await request(sink.url, {
          method: 'POST',
          body,
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'tern-signature': sign(body, secret) },
        });
        await res.body.dump();
      }
    }),
  );
  const rate = N / ((performance.now() - started) / 1000);
  await agent.close();
  await sink.close();
  return rate;
}

async function floorBullmq(redisUrl: string): Promise<number> {
  const prefix = `bench:${randomBytes(4).toString('hex')}`;
  const conn = createRedis(redisUrl, 'bullmq', 'bench');
  const queue = new Queue('floor', { connection: conn, prefix });
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => (finish = r));
  const worker = new Worker('floor', async () => {}, { connection: conn, prefix, concurrency: CONCURRENCY });
  worker.on('completed', () => ++done === N && finish());
  const started = performance.now();
  for (let i = 0; i < N; i += 500) {
    await queue.addBulk(Array.from({ length: Math.min(500, N - i) }, (_, k) => ({ name: 'j', data: { i: i + k } })));
  }
  await all;
  const rate = N / ((performance.now() - started) / 1000);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await closeRedis(conn);
  return rate;
}

async function tern(adminUrl: string, redisUrl: string) {
  const dbName = `tern_bench_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${dbName}"`);
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  const config = loadConfig({
    DATABASE_URL: u.toString(),
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `bench:${randomBytes(4).toString('hex')}`,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'silent',
  });
  const sql = createPool(config.databaseUrl, { max: 10 });
  await migrate(sql);
  const created = await createOrganization(sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
  const orgId = created.organization.id;
  const domain = await insertDomain(sql, { orgId, name: 'bench.test', status: 'verified' });
  const latencies: number[] = [];
  let received = 0;
  let onReceived: (() => void) | null = null;
  const sink = await startSink(() => {
    received++;
    onReceived?.();
  });
  await insertWebhook(sql, {
    orgId,
    url: sink.url,
    events: ['email.delivered'],
    description: null,
    secret: newSigningSecret(),
  });
  const emailId = newId('em');
  await sql`insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, subject, message_id)
    values (${emailId}, ${orgId}, ${domain.id}, 'live', 'a@bench.test', 'a@bench.test', ${['b@example.com']}, 'Bench', ${emailId})`;
  const deps = createWorkerDeps(config, createLogger('silent', 'bench'));
  const workers = [
    startWebhookFanout(deps, { concurrency: 32 }),
    startWebhookDelivery(deps, { concurrency: CONCURRENCY }),
  ];
  const emit = async (count: number) => {
    const rows = await recordEvents(
      sql,
      Array.from({ length: count }, () => ({
        orgId,
        mode: 'live' as const,
        type: 'email.delivered' as const,
        dedupeKey: newId('evt'),
        emailId,
        recipient: 'b@example.com',
      })),
    );
    await publishEvents(
      sql,
      deps.queues,
      rows.map((r) => r.id),
    );
  };
  const waitFor = (target: number) =>
    new Promise<void>((resolve) => {
      if (received >= target) return resolve();
      onReceived = () => received >= target && resolve();
    });
  // Idle latency: one event at a time, insert → 2xx at the receiver.
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    await emit(1);
    await waitFor(received + 1);
    latencies.push(performance.now() - t0);
  }
  // Throughput: N events published in batches of 500, until all are delivered.
  const base = received;
  const loaded: number[] = [];
  const batchEnds: { target: number; t0: number }[] = [];
  const started = performance.now();
  for (let i = 0; i < N; i += 500) {
    const t0 = performance.now();
    const batch = Math.min(500, N - i);
    await emit(batch);
    batchEnds.push({ target: base + i + batch, t0 });
  }
  for (const b of batchEnds) {
    await waitFor(b.target);
    loaded.push(performance.now() - b.t0);
  }
  const rate = N / ((performance.now() - started) / 1000);
  await Promise.all(workers.map((w) => w.close()));
  await deps.close();
  await sink.close();
  await sql.end();
  await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
  return {
    rate,
    idleP50: pct(latencies, 50),
    idleP99: pct(latencies, 99),
    batchP50: pct(loaded, 50),
    batchP99: pct(loaded, 99),
  };
}

export const description = 'event → webhook 2xx vs bare undici+HMAC and bare BullMQ floors';

export async function run(): Promise<void> {
  const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const undiciRate = await floorUndici();
  const bullRate = await floorBullmq(redisUrl);
  const t = await tern(adminUrl, redisUrl);
  const f = (x: number) => x.toFixed(0).padStart(8);
  console.log(`webhooks bench (N=${N}, concurrency ${CONCURRENCY})`);
  console.log(`floor undici+HMAC POSTs   ${f(undiciRate)} /s`);
  console.log(`floor BullMQ add→process  ${f(bullRate)} /s`);
  console.log(`Tern event→2xx            ${f(t.rate)} deliveries/s   (target ≥ 1500)`);
  console.log(`Tern / undici floor       ${(t.rate / undiciRate).toFixed(2)}`);
  console.log(`Tern / BullMQ floor       ${(t.rate / bullRate).toFixed(2)}   (target ≈ 0.3)`);
  console.log(
    `event→delivery idle       p50 ${t.idleP50.toFixed(1)} ms  p99 ${t.idleP99.toFixed(1)} ms   (target p50 < 50 ms)`,
  );
  console.log(`batch of 500 publish→all  p50 ${t.batchP50.toFixed(1)} ms  p99 ${t.batchP99.toFixed(1)} ms`);
}
