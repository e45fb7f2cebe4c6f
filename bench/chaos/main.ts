// `npm run chaos`: the fault suite (docs/operations.md "Reliability"). Starts a private install
// on loopback (bench/chaos/stack.ts), keeps a steady load of API and relay sends on it, and
// breaks it in turn (bench/chaos/faults.ts); after each fault it waits for quiet and prints one
// row of figures (bench/chaos/report.ts), then a row for the whole run. Bounded in count (the
// load's rate × the phases' length) and time (each wait has a ceiling; the bound is printed at
// start). Everything it started is stopped at the end, on Ctrl-C, on a crash (bench/lib/cleanup.ts)
// and, when the run itself is killed, by a reaper process. Exits 1 when a target is missed.
//   --rate N            sends per second (default 20)
//   --phase-seconds N   load per fault (default 20)
//   --fault-seconds N   how long the webhook receiver answers 500, the sink 421, and the sink
//                       closes idle connections (default 60)
//   --quiet-timeout N   longest wait for quiet after a fault (default 240)
//   --faults a,b        a subset of: worker-kill, web-kill, redis-restart, redis-flush,
//                       postgres-restart, webhook-500, sink-421, smarthost-idle-close,
//                       smarthost-restart, inbound-bomb, dmarc-flood, sentinel-failover,
//                       postgres-failover
// The failover faults run after the others, on a second install whose Postgres is a primary with
// a synchronous standby and whose Redis is a Sentinel set; each install has its whole-run row.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Cleanup } from '../lib/cleanup.js';
import { FAULTS, type Fault } from './faults.js';
import { Load, MAX_IN_FLIGHT } from './load.js';
import { cells, COLUMNS, exact, missed, settled, snapshot, tableRow, type Phase, type Row } from './report.js';
import { startStack, type ChaosStack, type Engines } from './stack.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Options {
  rate: number;
  phaseMs: number;
  faultMs: number;
  quietMs: number;
  faults: Fault[];
}

function args(argv: string[]): Options {
  const get = (name: string, fallback: number, max: number) => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return fallback;
    const n = Number(argv[i + 1]);
    if (!Number.isFinite(n) || n <= 0 || n > max) throw new Error(`chaos: --${name} takes a number in (0, ${max}]`);
    return n;
  };
  const known = new Set(['--rate', '--phase-seconds', '--fault-seconds', '--quiet-timeout', '--faults']);
  const stray = argv.filter((a, i) => a.startsWith('--') && !known.has(a) && !known.has(argv[i - 1] ?? ''));
  if (stray.length > 0) throw new Error(`chaos: unknown option(s) ${stray.join(', ')}`);
  const i = argv.indexOf('--faults');
  const names = i >= 0 ? (argv[i + 1] ?? '').split(',') : FAULTS.map((f) => f.name);
  const unknown = names.filter((n) => !FAULTS.some((f) => f.name === n));
  if (unknown.length > 0) throw new Error(`chaos: unknown fault(s) ${unknown.join(', ')}`);
  return {
    rate: get('rate', 20, 500),
    phaseMs: get('phase-seconds', 20, 600) * 1000,
    faultMs: get('fault-seconds', 60, 600) * 1000,
    quietMs: get('quiet-timeout', 240, 1800) * 1000,
    faults: FAULTS.filter((f) => names.includes(f.name)),
  };
}

/** Polls until the phase's sends and events settle and the metrics match the sink (or the ceiling). */
async function waitForQuiet(read: () => Promise<Row>, ceilingMs: number): Promise<Row> {
  const deadline = Date.now() + ceilingMs;
  let last: Row | null = null;
  while (Date.now() < deadline) {
    try {
      last = await read();
      if (settled(last) && exact(last)) return last;
    } catch {
      // Postgres or the API may still be coming back.
    }
    await sleep(1000);
  }
  return last ?? (await read());
}

async function runPhases(
  o: Options,
  faults: Fault[],
  stack: ChaosStack,
  load: Load,
  sql: postgres.Sql,
  failures: string[],
  wholeRun: string,
) {
  const phases: Phase[] = [];
  const notes: string[] = [];
  const quietSeconds = o.quietMs / 1000;
  for (const [i, fault] of faults.entries()) {
    const phase: Phase = { name: fault.name, startedAt: Date.now(), repairedAt: null };
    phases.push(phase);
    load.start(i);
    await sleep(Math.min(5000, o.phaseMs / 2));
    const began = Date.now();
    phase.repairedAt = await fault.inject(stack, o.faultMs);
    await sleep(Math.max(0, o.phaseMs - (Date.now() - began) - 5000));
    await load.stop();
    const x = await waitForQuiet(() => snapshot(stack, load, sql, phases, i), o.quietMs);
    console.log(tableRow(cells(fault.name, x, quietSeconds)));
    failures.push(...missed(fault.name, x, true, fault.recoverWithin));
    notes.push(`${fault.name}: last to arrive after the repair: ${x.slowest}`);
    const own = await fault.check?.(stack, sql);
    notes.push(...(own?.notes ?? []));
    failures.push(...(own?.missed ?? []));
  }
  const all = await waitForQuiet(() => snapshot(stack, load, sql, phases, null), 10_000);
  console.log(tableRow(cells(wholeRun, all, quietSeconds, '')));
  failures.push(...missed(wholeRun, all, false));
  for (const note of notes) console.log(note);
}

/** Starts an install on `engines`, runs `faults` on it, prints their rows, and stops it. */
async function runInstall(o: Options, engines: Engines, faults: Fault[], cleanup: Cleanup, dir: string) {
  const retry = '5,10,20,30,60';
  const stack = await startStack({ dir, deliveryRetry: retry, webhookRetry: retry, engines }, cleanup);
  console.log(`chaos: private install up on ${engines} engines (logs in ${dir})`);
  const sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {}, connect_timeout: 3 });
  const load = new Load(stack, o.rate, sql);
  cleanup.add('load and check connection', async () => {
    await load.stop();
    load.close();
    await sql.end({ timeout: 2 }).catch(() => {}); // the figures are printed; the stack stops next
  });
  const failures: string[] = [];
  console.log(tableRow(COLUMNS));
  console.log(tableRow(COLUMNS.map(() => '---')));
  await runPhases(o, faults, stack, load, sql, failures, engines === 'single' ? 'whole run' : `whole run (${engines})`);
  await cleanup.run();
  const exits = [...stack.unexpectedExits].map(([n, c]) => `${n} ×${c}`);
  if (exits.length > 0) failures.push(`processes that exited on their own: ${exits.join(', ')}`);
  console.log(`signature failures at the receiver (${engines}): ${stack.receiver.badSignatures}`);
  if (stack.receiver.badSignatures > 0) failures.push(`${stack.receiver.badSignatures} webhook signatures failed`);
  if (load.skipped > 0) console.log(`load ticks skipped (${MAX_IN_FLIGHT} requests already open): ${load.skipped}`);
  for (const [kind, n] of load.errors) console.log(`send errors: ${n} × ${kind}`);
  return failures;
}

async function main(cleanups: Cleanup[], dir: string): Promise<number> {
  const o = args(process.argv.slice(2));
  // Each phase: its load (or the fault, when longer) and the wait for quiet, at most.
  const boundMin = (o.faults.length * (Math.max(o.phaseMs, o.faultMs + 5000) + o.quietMs)) / 60_000;
  console.log(
    `chaos: rate ${o.rate}/s, ${o.phaseMs / 1000} s of load per fault, faults of ${o.faultMs / 1000} s, ` +
      `${o.faults.length} faults (at most ~${Math.ceil(boundMin)} min)`,
  );
  const failures: string[] = [];
  for (const engines of ['single', 'failover'] as const) {
    const faults = o.faults.filter((f) => (f.engines ?? 'single') === engines);
    if (faults.length === 0) continue;
    // Each install has its folder, its cleanup and its reaper, and is stopped before the next.
    const installDir = join(dir, engines);
    mkdirSync(installDir);
    const cleanup = new Cleanup(installDir);
    cleanups.push(cleanup);
    failures.push(...(await runInstall(o, engines, faults, cleanup, installDir)));
  }
  console.log(failures.length === 0 ? 'chaos: every target met' : `chaos: targets missed:\n  ${failures.join('\n  ')}`);
  return failures.length === 0 ? 0 : 1;
}

const dir = mkdtempSync(join(tmpdir(), 'tern-chaos-'));
const cleanups: Cleanup[] = [];
main(cleanups, dir).then(
  (code) => process.exit(code),
  async (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    for (const cleanup of cleanups) await cleanup.run();
    process.exit(1);
  },
);
