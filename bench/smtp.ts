// bench/smtp (issue 7): SMTP intake against a floor (nodemailer pooled transport → a bare
// smtp-server that accepts and discards), in two halves.
// Relay: the Tern relay accepting authenticated messages from a test key to queued emails
// (STARTTLS, AUTH, key checks, rate-limit token, header parsing, stripping X-Tern-*, one Postgres
// transaction and one BullMQ add per message). Targets: ≥ 200 messages/s and ratio ≥ 0.3.
// MX: replies sent to the MX (`api/smtp/mx`, stores each message before its 250, then enqueues
// it), measured until the inbound worker (`workers/main`, WORKER_QUEUES=inbound) has parsed,
// threaded and stored every one and recorded its email.received event.
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import type { MeasureOptions } from './lib/measure.js';
import { startProcess, startServer, type Child } from './lib/processes.js';
import { alternateRates, type RateSummary } from './lib/rates.js';
import { alternateSmtp } from './lib/smtp-measure.js';
import { createBenchSender, createBenchStack, type BenchStack } from './lib/stack.js';

export const description = 'SMTP relay (→ queued emails) and MX (→ parsed inbound) vs a bare smtp-server';

const message = () => ({
  envelope: { from: 'hello@bench.test', to: ['someone@example.net'] },
  from: 'Bench <hello@bench.test>',
  to: 'someone@example.net',
  subject: 'Benchmark message',
  text: 'Hello from the relay benchmark.\n'.repeat(20),
  html: `<p>${'Hello from the relay benchmark. '.repeat(20)}</p>`,
  headers: { 'X-Tern-Tags': 'bench=smtp', 'X-Tern-Kind': 'bench' },
});

/** Authenticated relay → queued emails, against the bare smtp-server floor. */
export async function measureRelay(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const { keyId, token } = await createBenchSender(stack, 'bench relay (test)');
    const floor = await startServer('bench/servers/smtp-floor', {});
    children.push(floor);
    const relay = await startServer('bench/servers/relay', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    });
    children.push(relay);
    // SMTP connections are heavier than HTTP requests: default to fewer of them than bench/api.
    const connections = Math.min(measure.connections, 10);
    console.log(
      `bench/smtp (relay): ${measure.pairs} pairs of ${measure.sliceSeconds} s slices, ${connections} pooled connections`,
    );
    const s = await alternateSmtp(
      { name: 'floor', port: floor.port, auth: { user: 'bench', pass: 'bench' }, message },
      { name: 'relay', port: relay.port, auth: { user: keyId, pass: token }, message },
      { ...measure, connections },
    );
    const [row] = await stack.sql<{ n: string }[]>`select count(*) as n from emails where source = 'smtp'`;
    const n = row?.n ?? '0';
    console.log(`  relay stored ${n} queued emails`);
    const verdict = s.tern >= 200 && s.ratio >= 0.3 ? 'meets' : 'misses';
    console.log(`  target (relay ≥ 200 msg/s, ratio ≥ 0.3): ${verdict}`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}

/** Messages per batch: BENCH_SMTP_MESSAGES, else 100 per second of --slice. */
function batchSize(measure: MeasureOptions): number {
  const n = Number(process.env.BENCH_SMTP_MESSAGES ?? Math.round(measure.sliceSeconds * 100));
  if (!Number.isFinite(n) || n < 1) throw new Error('bench/smtp: BENCH_SMTP_MESSAGES must be a positive number');
  return Math.round(n);
}

function reply(i: number): SendMailOptions {
  return {
    envelope: { from: `customer${i}@example.net`, to: 'support@reply.acme.test' },
    from: `Customer ${i} <customer${i}@example.net>`,
    to: 'Acme Support <support@reply.acme.test>',
    subject: `Re: Your order #${i}`,
    inReplyTo: `<em_01JBENCH00000000000000${String(i % 1000).padStart(4, '0')}@acme.test>`,
    text: `Thanks! A question about order ${i}.\n\n> On Monday, Acme wrote:\n> Your order has shipped.\n`,
    html: `<p>Thanks! A question about order ${i}.</p><blockquote>Your order has shipped.</blockquote>`,
  };
}

/** Sends `n` replies through one pooled transport; returns the 250 replies' texts. */
async function sendBatch(port: number, n: number, connections: number): Promise<string[]> {
  const t = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    pool: true,
    maxConnections: connections,
    ignoreTLS: true,
  });
  try {
    const infos = await Promise.all(Array.from({ length: n }, (_, i) => t.sendMail(reply(i))));
    return infos.map((info) => String(info.response));
  } finally {
    t.close();
  }
}

async function waitProcessed(stack: BenchStack, ids: string[]): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const [row] = await stack.sql<{ n: number }[]>`
      select count(*)::int as n from inbound_messages where id = any(${ids}) and status <> 'stored'`;
    if (row!.n >= ids.length) return;
    if (Date.now() > deadline) throw new Error(`bench/smtp: ${ids.length - row!.n} replies not processed in 300 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** MX intake → parsed inbound records, against the bare smtp-server floor. */
export async function measureMx(measure: MeasureOptions): Promise<RateSummary> {
  const stack = await createBenchStack();
  const stops: (() => Promise<void>)[] = [];
  try {
    const org = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
    await insertDomain(stack.sql, { orgId: org.organization.id, name: 'acme.test', status: 'verified' });
    const env = {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    };
    const floor = await startServer('bench/servers/smtp-floor', {});
    stops.push(() => floor.stop());
    const mx = await startServer('bench/servers/mx', env);
    stops.push(() => mx.stop());
    const worker = startProcess('workers/main', { ...env, WORKER_QUEUES: 'inbound' });
    stops.push(() => worker.stop());

    const n = batchSize(measure);
    const connections = Math.min(measure.connections, 20);
    console.log(`bench/smtp mx: ${measure.pairs} pairs of ${n}-message batches, ${connections} SMTP connections`);
    let failures = 0;
    const summary = await alternateRates(
      {
        name: 'smtp-server',
        async run() {
          const start = performance.now();
          await sendBatch(floor.port, n, connections);
          return n / ((performance.now() - start) / 1000);
        },
      },
      {
        name: 'tern mx',
        async run() {
          const start = performance.now();
          const responses = await sendBatch(mx.port, n, connections);
          const ids = responses.flatMap((r) => /queued as (inb_[0-9A-Z]+)/.exec(r)?.[1] ?? []);
          failures += n - ids.length;
          await waitProcessed(stack, ids);
          return ids.length / ((performance.now() - start) / 1000);
        },
      },
      { pairs: measure.pairs, unit: 'msg/s' },
    );
    if (failures > 0) console.log(`  WARNING: ${failures} messages were not queued (figures are not valid)`);
    return summary;
  } finally {
    for (const stop of stops.reverse()) await stop();
    await stack.drop();
  }
}

export async function run(measure: MeasureOptions): Promise<void> {
  console.log('-- relay half: authenticated messages until queued');
  await measureRelay(measure);
  console.log('-- MX half: intake until the inbound worker has processed every reply');
  await measureMx(measure);
}
