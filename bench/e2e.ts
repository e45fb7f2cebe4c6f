// bench/e2e (issue 23): the whole pipeline on a private install (bench/chaos/stack.ts: its own
// Postgres and Redis, so no one else's load is counted; web, worker, relay and MX from dist/, an
// SMTP sink as the smarthost, a webhook endpoint subscribed to every event). N messages (default
// 10,000; `--messages N`) go in through POST /emails/batch (100 per request, 4 clients at once);
// it prints the time from the first request to the last message at the sink, to the last
// email.delivered webhook, and until GET /metrics counts as many delivered as the sink holds;
// messages/hour; duplicates at the sink; and the CPU each process spent per delivered message
// (utime + stime from /proc before and after: web, worker, Postgres (the postmaster and its
// children), redis-server), with Postgres's statements per message from pg_stat_statements.
// Target (issue 23): ≥ 1,500,000 messages/hour with 0 duplicates, webhooks and metrics within
// 10 s of the last delivery.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { startStack, type ChaosStack } from './chaos/stack.js';
import { Cleanup } from './lib/cleanup.js';
import { cpuSeconds, type MeasureOptions } from './lib/measure.js';
import { cpuTimes } from './lib/runs.js';

export const description = 'N messages: POST /emails/batch → sink → email.delivered webhook → GET /metrics';

const CLIENTS = 4;
const PER_REQUEST = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loads = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');

/** The postmaster (first line of postmaster.pid) and every process whose parent it is. */
function postgresPids(dataDir: string): number[] {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

type Group = 'web' | 'worker' | 'postgres' | 'redis';

/** CPU seconds so far of each group's processes, by pid (a process gone since counts nothing). */
function snapshot(stack: ChaosStack): Record<Group, Map<number, number>> {
  const of = (pids: (number | null | undefined)[]) =>
    new Map(pids.filter((p): p is number => typeof p === 'number').map((p) => [p, cpuSeconds(p)]));
  return {
    web: of([stack.pid('web')]),
    worker: of([stack.pid('worker')]),
    // bench/e2e runs on the single engines (no failover pair), whose processes it can read.
    postgres: of(stack.pg ? postgresPids(stack.pg.pgCtl.data) : []),
    redis: of([stack.redis?.pid()]),
  };
}

/** CPU seconds spent between two snapshots, by group (processes started meanwhile count from 0). */
function spent(a: Record<Group, Map<number, number>>, b: Record<Group, Map<number, number>>): Record<Group, number> {
  const sum = (g: Group) =>
    [...b[g]].reduce((s, [pid, t]) => s + (Number.isFinite(t) ? t - (a[g].get(pid) ?? 0) : 0), 0);
  return { web: sum('web'), worker: sum('worker'), postgres: sum('postgres'), redis: sum('redis') };
}

async function send(stack: ChaosStack, n: number, tag: string): Promise<number> {
  const headers = { authorization: `Bearer ${stack.org.token}`, 'content-type': 'application/json' };
  const requests = Math.ceil(n / PER_REQUEST);
  let next = 0;
  let accepted = 0;
  const client = async () => {
    for (let r = next++; r < requests; r = next++) {
      const count = Math.min(PER_REQUEST, n - r * PER_REQUEST);
      const body = Array.from({ length: count }, (_, i) => ({
        from: `Bench <hello@${stack.org.domain}>`,
        to: `r${r * PER_REQUEST + i}.${tag}@dest.test`,
        subject: 'Your order has shipped',
        html: '<p>Hello from the end-to-end benchmark.</p>',
      }));
      const res = await fetch(`${stack.apiUrl}/emails/batch`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (res.status !== 200)
        throw new Error(`bench/e2e: POST /emails/batch answered ${res.status}: ${await res.text()}`);
      accepted += ((await res.json()) as { data: unknown[] }).data.length;
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  return accepted;
}

async function metricsDelivered(stack: ChaosStack): Promise<number> {
  const res = await fetch(`${stack.apiUrl}/metrics?days=2`, {
    headers: { authorization: `Bearer ${stack.org.token}` },
  });
  return res.ok ? ((await res.json()) as { totals: { delivered: number } }).totals.delivered : -1;
}

const deliveredHooks = (stack: ChaosStack) =>
  [...stack.receiver.firstAt].filter(([key]) => key.startsWith('email.delivered|'));

export async function run(measure: MeasureOptions): Promise<void> {
  const n = measure.messages ?? 10_000;
  const ceilingMs = 120_000 + n * 60; // about 17 messages/s at the very least
  const dir = mkdtempSync(join(tmpdir(), 'tern-e2e-'));
  const cleanup = new Cleanup(dir);
  try {
    const retry = '5,10,20,30,60';
    const stack = await startStack({ dir, deliveryRetry: retry, webhookRetry: retry, statements: true }, cleanup);
    const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
    cleanup.add('statistics connection', () => sql.end({ timeout: 2 }));
    await sql`create extension if not exists pg_stat_statements`;
    // Warm-up: one request through every step, so the run does not count first-use costs.
    await send(stack, 1, 'warm');
    const warm = 1;
    const until = async (what: string, done: () => boolean | Promise<boolean>, every = 100) => {
      const deadline = Date.now() + ceilingMs;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`bench/e2e: ${what} not reached within ${ceilingMs / 1000} s`);
        await sleep(every);
      }
    };
    await until(
      'the warm-up message',
      async () => (await metricsDelivered(stack)) === warm && deliveredHooks(stack).length === warm,
      250,
    );
    await sleep(1000);
    await sql`select pg_stat_statements_reset()`;
    console.log(`bench/e2e: ${n} messages, ${CLIENTS} clients × ${PER_REQUEST} per request; load average ${loads()}`);
    const cpu0 = snapshot(stack);
    const machine0 = cpuTimes();
    const t0 = Date.now();
    const accepted = await send(stack, n, 'run');
    const acceptedMs = Date.now() - t0;
    await until('every message at the sink', () => stack.sink.accepted.size >= warm + n);
    await until('every email.delivered webhook', () => deliveredHooks(stack).length >= warm + n);
    await until(
      'GET /metrics equal to the sink',
      async () => (await metricsDelivered(stack)) === stack.sink.accepted.size,
      250,
    );
    const metricsMs = Date.now() - t0;
    const cpu1 = snapshot(stack);
    const machine1 = cpuTimes();
    const lastAt = (times: number[]) => Math.max(...times) - t0;
    const sinkMs = lastAt([...stack.sink.firstAt.values()]);
    const hookMs = lastAt(deliveredHooks(stack).map(([, at]) => at));
    const duplicates = stack.sink.total - stack.sink.accepted.size;
    const perHour = Math.round((n / sinkMs) * 3_600_000);
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(`  accepted ${accepted} in ${s(acceptedMs)} (${Math.round(accepted / (acceptedMs / 1000))} emails/s)`);
    console.log(`  last message at the sink: ${s(sinkMs)} → ${perHour.toLocaleString('en')} messages/hour`);
    console.log(`  last email.delivered webhook: ${s(hookMs)} (${s(hookMs - sinkMs)} after the last delivery)`);
    console.log(`  GET /metrics equal to the sink: by ${s(metricsMs)} (polled every 250 ms)`);
    const events = (stack.receiver.firstAt.size / (n + warm)).toFixed(1);
    console.log(`  duplicates at the sink: ${duplicates}; webhook events received per message: ${events}`);
    const used = spent(cpu0, cpu1);
    const total = used.web + used.worker + used.postgres + used.redis;
    const ms = (sec: number) => ((sec * 1000) / n).toFixed(2);
    console.log('  CPU per delivered message (ms): process | ms | share');
    for (const g of ['web', 'worker', 'postgres', 'redis'] as const) {
      console.log(`    ${g.padEnd(8)} | ${ms(used[g])} | ${((used[g] / total) * 100).toFixed(0)} %`);
    }
    console.log(`    total    | ${ms(total)}`);
    if (machine0 && machine1) {
      const busy = 1 - (machine1.idle - machine0.idle) / (machine1.total - machine0.total);
      console.log(`  machine busy during the run: ${(busy * 100).toFixed(0)} %; load average after: ${loads()}`);
    }
    const rows = await sql<{ query: string; calls: number; ms: number }[]>`
      select regexp_replace(query, '\\s+', ' ', 'g') as query, calls::int as calls,
             total_exec_time::float8 as ms
      from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc`;
    const calls = rows.reduce((a, r) => a + r.calls, 0);
    const execMs = rows.reduce((a, r) => a + r.ms, 0);
    console.log(
      `  Postgres: ${(calls / n).toFixed(2)} statements per message, ${((execMs * 1000) / n).toFixed(0)} µs of` +
        ` execution per message; the heaviest (per message: calls, µs):`,
    );
    for (const r of rows.slice(0, 12)) {
      console.log(
        `    ${(r.calls / n).toFixed(3).padStart(7)}  ${((r.ms * 1000) / n).toFixed(0).padStart(5)}  ${r.query.slice(0, 110)}`,
      );
    }
    const ok = perHour >= 1_500_000 && duplicates === 0 && hookMs - sinkMs <= 10_000 && metricsMs - sinkMs <= 10_000;
    console.log(
      `  target (≥ 1,500,000 messages/hour, 0 duplicates, webhooks and metrics within 10 s): ${ok ? 'meets' : 'misses'}`,
    );
  } finally {
    await cleanup.run();
  }
}
