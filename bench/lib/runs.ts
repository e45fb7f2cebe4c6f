// Alternating slices for benchmarks of work rather than of HTTP requests (messages delivered,
// webhooks received, events counted): each side runs one slice of fixed work, A B A B …, and the
// figures are medians, so a busy machine slows both sides alike. A slice reports how many items
// it completed and in how long (its own timing, so set-up outside the timed part is excluded).
import { readFileSync } from 'node:fs';
import { median } from './measure.js';

export interface RunResult {
  items: number;
  seconds: number;
  /** Per-item latencies in ms, when the side measures them. */
  latencies?: number[];
  /** Share of the machine's CPU time that was busy during the slice (Linux; set by alternateRuns). */
  busy?: number;
}

/** Jiffies of all CPUs: idle (idle + iowait) and total, from /proc/stat; null elsewhere. */
export function cpuTimes(): { idle: number; total: number } | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3]! + f[4]!, total: f.slice(0, 8).reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/** Runs a slice and notes how busy the machine was meanwhile: near 100% means CPU-bound. */
async function timed(side: Side, i: number): Promise<RunResult> {
  const a = cpuTimes();
  const r = await side.slice(i);
  const b = cpuTimes();
  if (a && b && b.total > a.total) r.busy = 1 - (b.idle - a.idle) / (b.total - a.total);
  return r;
}

export interface Side {
  name: string;
  /** Runs slice number `i` (0 = warm-up). */
  slice(i: number): Promise<RunResult>;
}

export interface RunSummary {
  floor: number;
  tern: number;
  /** Median of the per-pair ratios tern / floor. */
  ratio: number;
  ternLatency: { p50: number; p99: number } | null;
  /** The second floor, when one was given: its median and Tern's median per-round ratio to it. */
  second?: { name: string; floor: number; ratio: number };
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

const rate = (r: RunResult) => (r.seconds > 0 ? r.items / r.seconds : 0);

function line(name: string, r: RunResult, unit: string, width = 8): string {
  const lat = r.latencies?.length
    ? `   p50 ${percentile(r.latencies, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(r.latencies, 99).toFixed(1).padStart(7)} ms`
    : '';
  const busy = r.busy !== undefined ? `   machine busy ${(r.busy * 100).toFixed(0).padStart(3)}%` : '';
  return `${name.padEnd(width)} ${rate(r).toFixed(0).padStart(8)} ${unit}${lat}${busy}`;
}

const ratioOf = (t: RunResult, f: RunResult) => (rate(f) > 0 ? rate(t) / rate(f) : 0);

/**
 * Warms each side with one slice, then runs `pairs` alternating rounds (floor, [second floor,]
 * Tern); prints every figure. A second floor (e.g. a like-for-like variant of the first) is
 * measured in the same rounds, A B C A B C …, and Tern's ratio to it is reported beside the
 * ratio to the primary floor.
 */
export async function alternateRuns(
  floor: Side,
  tern: Side,
  pairs: number,
  unit: string,
  second?: Side,
): Promise<RunSummary> {
  const floors = second ? [floor, second] : [floor];
  const w = Math.max(8, ...[...floors, tern].map((s) => s.name.length));
  for (const side of [...floors, tern]) await side.slice(0);
  const f: RunResult[][] = floors.map(() => []);
  const t: RunResult[] = [];
  for (let i = 1; i <= pairs; i++) {
    for (const [k, side] of floors.entries()) f[k]!.push(await timed(side, i));
    t.push(await timed(tern, i));
    for (const [k, side] of floors.entries()) {
      console.log(`  ${k === 0 ? `pair ${i}` : ''}`.padEnd(10) + line(side.name, f[k]!.at(-1)!, unit, w));
    }
    const ratios = f.map((rs) => ratioOf(t.at(-1)!, rs.at(-1)!).toFixed(2)).join(' / ');
    console.log(`          ${line(tern.name, t.at(-1)!, unit, w)}   ratio ${ratios}`);
  }
  const lat = t.flatMap((r) => r.latencies ?? []);
  const medRatio = (rs: RunResult[]) => median(rs.map((x, i) => ratioOf(t[i]!, x)));
  const summary: RunSummary = {
    floor: median(f[0]!.map(rate)),
    tern: median(t.map(rate)),
    ratio: medRatio(f[0]!),
    ternLatency: lat.length > 0 ? { p50: percentile(lat, 50), p99: percentile(lat, 99) } : null,
    ...(second ? { second: { name: second.name, floor: median(f[1]!.map(rate)), ratio: medRatio(f[1]!) } } : {}),
  };
  for (const [k, side] of [...floors, tern].entries()) {
    const m = k < floors.length ? median(f[k]!.map(rate)) : summary.tern;
    console.log(
      `  ${k === 0 ? 'median' : ''}`.padEnd(10) + `${side.name.padEnd(w)} ${m.toFixed(0).padStart(8)} ${unit}`,
    );
  }
  console.log(`  median of per-pair ratios: ${summary.ratio.toFixed(2)}${second ? ` (to ${floor.name})` : ''}`);
  if (summary.second) {
    console.log(`                             ${summary.second.ratio.toFixed(2)} (to ${second!.name})`);
  }
  return summary;
}

/** Polls `fn` every `everyMs` until it returns true; throws after `timeoutMs`. */
export async function until(
  fn: () => Promise<boolean>,
  what: string,
  timeoutMs = 120_000,
  everyMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
