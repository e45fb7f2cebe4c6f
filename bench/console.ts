// bench/console (issue 14 item 1): the console's Emails page on an organization of
// BENCH_CONSOLE_EMAILS (default 1,000,000) messages, seeded with set-based SQL into the bench's
// own database, among BENCH_CONSOLE_OTHER (default 100,000) messages of another organization.
// A signed-in browser's requests, one at a time, to the real web process (a child): the first
// page, recipient searches (exact, prefix) and the other filters. Each query gets one slice per
// round, the queries taking turns (A B C … A B C …), so that a busy machine slows them alike;
// p50/p99 over every request of every round, beside the target: p99 < 150 ms for the first
// page and the recipient searches.
import { loadavg } from 'node:os';
import { Agent, request } from 'undici';
import { createOrganization } from '../shared/bootstrap.js';
import { insertDomain } from '../shared/db/domains.js';
import { mintKey } from '../shared/keys.js';
import { insertTemplate } from '../shared/db/templates.js';
import type { Sql } from '../shared/db/pool.js';
import { PROVIDERS, seedConsoleEmails, type ConsoleSeed } from './lib/console-seed.js';
import type { MeasureOptions } from './lib/measure.js';
import { startServer, type Child } from './lib/processes.js';
import { cpuTimes, percentile } from './lib/runs.js';
import { createBenchStack } from './lib/stack.js';

export const description = 'console Emails page p50/p99 at 1,000,000 messages: first page, recipient search, filters';

const TARGET_MS = 150;

interface Query {
  name: string;
  /** Held to the 150 ms target. */
  target: boolean;
  /** The path of request number n (varied, so that no two requests ask exactly the same). */
  path(n: number): string;
}

function queries(s: ConsoleSeed, total: number): Query[] {
  const addr = (n: number) => `user${(n * 7919) % s.addresses}%40${PROVIDERS[(n * 3) % PROVIDERS.length]}`;
  const order = (n: number) => Math.floor(((n * 104729) % total) / 5) * 5;
  const month = new Date(Date.now() - 45 * 86_400_000).toISOString().slice(0, 10);
  const monthEnd = new Date(Date.now() - 38 * 86_400_000).toISOString().slice(0, 10);
  return [
    { name: 'first page', target: true, path: () => '/console/emails' },
    { name: 'recipient, exact', target: true, path: (n) => `/console/emails?to=${addr(n)}` },
    { name: 'recipient, prefix', target: true, path: (n) => `/console/emails?to=user${(n * 7919) % s.addresses}*` },
    { name: 'recipient + status', target: true, path: (n) => `/console/emails?to=${addr(n)}&state=delivered` },
    { name: 'subject words (rare)', target: false, path: (n) => `/console/emails?subject=order+${order(n)}` },
    { name: 'subject words (common)', target: false, path: () => '/console/emails?subject=weekly+digest' },
    { name: 'from', target: false, path: (n) => `/console/emails?from=billing${n % 5}%40a.bench.test` },
    { name: 'tag name=value', target: false, path: (n) => `/console/emails?tag=order%3D${order(n)}` },
    { name: 'status (1 %)', target: false, path: () => '/console/emails?state=failed' },
    {
      name: 'status + domain',
      target: false,
      path: (n) => `/console/emails?state=bounced&domain=${s.domainIds[n % 4]}`,
    },
    { name: 'template (5 %)', target: false, path: () => `/console/emails?template=${s.templateIds[1]}` },
    { name: 'date range (a week)', target: false, path: () => `/console/emails?since=${month}&until=${monthEnd}` },
    { name: 'test mode', target: false, path: () => '/console/emails?mode=test' },
  ];
}

export async function setUp(
  sql: Sql,
  name: string,
): Promise<{ seed: Omit<ConsoleSeed, 'addresses'>; password: string; email: string }> {
  const org = await createOrganization(sql, 'tern', { name, adminEmail: `${name.toLowerCase()}@bench.test` });
  const orgId = org.organization.id;
  const domainIds: string[] = [];
  for (const d of ['a', 'b', 'c', 'd']) {
    domainIds.push(
      (await insertDomain(sql, { orgId, name: `${d}.${name.toLowerCase()}.bench.test`, status: 'verified' })).id,
    );
  }
  const keyIds: string[] = [];
  for (const k of ['web', 'worker', 'relay']) {
    const { key } = await mintKey(sql, 'tern', {
      orgId,
      name: k,
      mode: 'live',
      permission: 'SEND',
      domainIds: [],
      createdBy: null,
    });
    keyIds.push(key.id);
  }
  const templateIds: string[] = [];
  for (const slug of ['receipt', 'welcome']) {
    const t = await insertTemplate(sql, {
      orgId,
      slug,
      name: slug,
      subject: slug,
      html: null,
      text: 'x',
      from_address: null,
      variables: [],
    });
    templateIds.push(t!.id);
  }
  return { seed: { orgId, domainIds, keyIds, templateIds }, password: org.user.password, email: org.user.email };
}

async function signIn(api: Child, email: string, password: string): Promise<string> {
  const res = await request(`${api.url}/console/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password }).toString(),
  });
  await res.body.text();
  const cookie = String(res.headers['set-cookie'] ?? '').split(';')[0]!;
  if (res.statusCode !== 303 || !cookie.startsWith('console_session=')) {
    throw new Error(`bench/console: sign-in answered ${res.statusCode}`);
  }
  return cookie;
}

/** Requests one after another for `seconds`; returns each one's latency (ms). */
async function slice(api: Child, agent: Agent, cookie: string, q: Query, seconds: number, from: number) {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  for (let n = from; performance.now() < end; n++) {
    const t0 = performance.now();
    const res = await request(`${api.url}${q.path(n)}`, { dispatcher: agent, headers: { cookie } });
    const body = await res.body.text();
    latencies.push(performance.now() - t0);
    if (res.statusCode !== 200 || !body.includes('<h1>Emails</h1>')) {
      throw new Error(`bench/console: ${q.path(n)} answered ${res.statusCode}`);
    }
  }
  return latencies;
}

async function measure(api: Child, cookie: string, qs: Query[], m: MeasureOptions): Promise<void> {
  const agent = new Agent({ connections: 1 });
  const all = new Map(qs.map((q) => [q.name, [] as number[]]));
  const cpu0 = cpuTimes();
  const load: number[] = [];
  try {
    for (const q of qs) await slice(api, agent, cookie, q, 0.5, 0); // warm-up
    for (let round = 1; round <= m.pairs; round++) {
      for (const q of qs) all.get(q.name)!.push(...(await slice(api, agent, cookie, q, m.sliceSeconds, round * 1000)));
      load.push(loadavg()[0]!);
    }
  } finally {
    await agent.close();
  }
  const cpu1 = cpuTimes();
  const busy = cpu0 && cpu1 && cpu1.total > cpu0.total ? 1 - (cpu1.idle - cpu0.idle) / (cpu1.total - cpu0.total) : NaN;
  for (const q of qs) {
    const l = all.get(q.name)!;
    const p99 = percentile(l, 99);
    const verdict = q.target ? (p99 < TARGET_MS ? '  meets p99 < 150 ms' : '  MISSES p99 < 150 ms') : '';
    console.log(
      `  ${q.name.padEnd(24)} p50 ${percentile(l, 50).toFixed(1).padStart(6)} ms   p99 ${p99.toFixed(1).padStart(6)} ms   (${String(l.length).padStart(4)} requests)${verdict}`,
    );
  }
  console.log(
    `  machine: load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} over the rounds, CPU busy ${(busy * 100).toFixed(0)}% (${m.pairs} rounds of ${m.sliceSeconds} s per query)`,
  );
}

export async function run(m: MeasureOptions): Promise<void> {
  const total = Number(process.env.BENCH_CONSOLE_EMAILS ?? 1_000_000);
  const other = Number(process.env.BENCH_CONSOLE_OTHER ?? 100_000);
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const main = await setUp(stack.sql, 'Big');
    const seed: ConsoleSeed = { ...main.seed, addresses: Math.max(1, Math.floor(total / 5)) };
    const t0 = performance.now();
    console.log(
      `bench/console: seeding ${total.toLocaleString('en')} messages (and ${other.toLocaleString('en')} of another organization)…`,
    );
    await seedConsoleEmails(stack.sql, seed, total);
    if (other > 0) {
      const o = await setUp(stack.sql, 'Other');
      await seedConsoleEmails(stack.sql, { ...o.seed, addresses: Math.max(1, Math.floor(other / 5)) }, other);
    }
    const conn = await stack.sql.reserve();
    try {
      await conn`set statement_timeout = 0`;
      await conn`vacuum analyze emails`;
      await conn`vacuum analyze email_recipients`;
    } finally {
      conn.release();
    }
    const [size] = await stack.sql<{ emails: number; recipients: number }[]>`
      select (select count(*)::int from emails) as emails, (select count(*)::int from email_recipients) as recipients`;
    console.log(
      `  seeded ${size!.emails.toLocaleString('en')} emails, ${size!.recipients.toLocaleString('en')} recipients in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    const api = await startServer('api/http', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    });
    children.push(api);
    const cookie = await signIn(api, main.email, main.password);
    console.log(`  ${m.pairs} rounds; each query ${m.sliceSeconds} s a round, one request at a time, signed in:`);
    await measure(api, cookie, queries(seed, total), m);
    console.log('  target: p99 < 150 ms for the first page and the recipient searches');
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
