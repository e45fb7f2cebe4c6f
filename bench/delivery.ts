// Delivery benchmark (issue 4): in one run, the floor (nodemailer's pooled SMTP transport sending
// to a local smtp-server sink) and Tern's delivery worker delivering DKIM-signed live messages to
// the same sink in smarthost mode. Prints messages/s to 250 for each and the ratio.
// Needs Postgres and Redis (TEST_DATABASE_URL / TEST_REDIS_URL as for the tests).
// Usage: npx tsx bench/delivery.ts [messages=2000]
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { startDeliveryWorker } from '../workers/delivery.js';
import { createWorkerDeps } from '../workers/deps.js';
import { createTestDb, dropCreatedDatabases } from '../test/helpers/db.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../test/helpers/mail-seed.js';

const N = Number(process.argv[2] ?? 2000);
const HTML = '<p>Hello from the delivery benchmark.</p>';

async function startSink() {
  let received = 0;
  let onCount: (() => void) | null = null;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData(stream, _s, cb) {
      stream.resume();
      stream.on('end', () => {
        received++;
        onCount?.();
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  const until = (n: number) =>
    new Promise<void>((resolve) => {
      onCount = () => received >= n && resolve();
      onCount();
    });
  return { port, until, reset: () => (received = 0), close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function floor(port: number): Promise<number> {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, pool: true, maxConnections: 5, ignoreTLS: true });
  const start = performance.now();
  const batch = 200;
  for (let i = 0; i < N; i += batch) {
    const jobs = [];
    for (let j = i; j < Math.min(N, i + batch); j++) {
      jobs.push(t.sendMail({ from: 'hello@acme.test', to: `r${j}@dest.test`, subject: 'bench', html: HTML }));
    }
    await Promise.all(jobs);
  }
  const secs = (performance.now() - start) / 1000;
  t.close();
  return N / secs;
}

async function tern(sink: Awaited<ReturnType<typeof startSink>>): Promise<number> {
  const db = await createTestDb();
  const config = loadConfig({
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `ternbench:${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'silent',
    SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}`,
  });
  const deps = createWorkerDeps(config, createLogger('silent', 'bench'));
  const created = await createOrganization(db.sql, 'tern', { name: 'Bench', adminEmail: `b${Date.now()}@bench.test` });
  const orgId = created.organization.id;
  const dom = await insertDomain(db.sql, { orgId, name: 'acme.test', status: 'verified' });
  await db.sql`update domains set verified_at = now() - interval '60 days' where id = ${dom.id}`;
  await giveDkimKey(db.sql, dom.id);
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const e = await seedEmail(db.sql, {
      orgId,
      domainId: dom.id,
      domainName: 'acme.test',
      to: [`r${i}@dest.test`],
      html: HTML,
    });
    ids.push(e.id);
  }
  sink.reset();
  const worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  const start = performance.now();
  await Promise.all(ids.map((id) => enqueueEmail(deps.queues, id)));
  await sink.until(N);
  const secs = (performance.now() - start) / 1000;
  await worker.close();
  await deps.close();
  await db.sql.end();
  return N / secs;
}

async function main() {
  const sink = await startSink();
  try {
    const f = await floor(sink.port);
    const t = await tern(sink);
    console.log(`delivery: floor (nodemailer pool → smtp-server) ${f.toFixed(0)} msg/s`);
    console.log(`delivery: tern worker (DKIM, smarthost)         ${t.toFixed(0)} msg/s`);
    console.log(`delivery: ratio ${(t / f).toFixed(2)} (target ≥ 0.5; tern target ≥ 300 msg/s)`);
  } finally {
    await sink.close();
    await dropCreatedDatabases();
  }
}

await main();
