// TERN_TEST_TIMINGS=<file>: the root hooks append one line per test file, "<wall ms> <cpu ms>
// <file>", to see what dominates a run (docs/testing.md). CPU is the mocha worker's own and that
// of the processes it started and reaped (the CLI, npm start, Procfile runs), from /proc on Linux;
// the Postgres and Redis servers' work is not in it.
import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** User + system CPU of this process and its reaped children, in ms. */
function cpuMs(): number {
  try {
    // Fields after the command name: utime, stime, cutime, cstime are the 14th–17th of the line.
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return ticks * 10; // USER_HZ is 100 on Linux
  } catch {
    const u = process.cpuUsage();
    return Math.round((u.user + u.system) / 1000);
  }
}

let started: { wall: number; cpu: number } | null = null;

export function startTiming(): void {
  if (process.env.TERN_TEST_TIMINGS) started = { wall: Date.now(), cpu: cpuMs() };
}

export function recordTiming(suite: Mocha.Suite | undefined): void {
  const out = process.env.TERN_TEST_TIMINGS;
  if (!out || !started) return;
  const files = new Set((suite?.suites ?? []).map((s) => relative(process.cwd(), s.file ?? '?')));
  appendFileSync(out, `${Date.now() - started.wall} ${cpuMs() - started.cpu} ${[...files].join(' ')}\n`);
  started = null;
}
