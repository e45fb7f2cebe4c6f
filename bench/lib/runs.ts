// Alternating slices for benchmarks of work rather than of HTTP requests (messages delivered,
// webhooks received, events counted): each side runs one slice of fixed work, A B A B …, and the
// figures are medians, so a busy machine slows both sides alike. A slice reports how many items
// it completed and in how long (its own timing, so set-up outside the timed part is excluded).
import { median } from './measure.js';

export interface RunResult {
  items: number;
  seconds: number;
  /** Per-item latencies in ms, when the side measures them. */
  latencies?: number[];
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
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

const rate = (r: RunResult) => (r.seconds > 0 ? r.items / r.seconds : 0);

function line(name: string, r: RunResult, unit: string): string {
  const lat = r.latencies?.length
    ? `   p50 ${percentile(r.latencies, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(r.latencies, 99).toFixed(1).padStart(7)} ms`
    : '';
  return `${name.padEnd(8)} ${rate(r).toFixed(0).padStart(8)} ${unit}${lat}`;
}

/** Warms both sides with one slice each, then runs `pairs` alternating slices; prints every figure. */
export async function alternateRuns(floor: Side, tern: Side, pairs: number, unit: string): Promise<RunSummary> {
  await floor.slice(0);
  await tern.slice(0);
  const f: RunResult[] = [];
  const t: RunResult[] = [];
  for (let i = 1; i <= pairs; i++) {
    f.push(await floor.slice(i));
    t.push(await tern.slice(i));
    const ratio = rate(f.at(-1)!) > 0 ? rate(t.at(-1)!) / rate(f.at(-1)!) : 0;
    console.log(`  pair ${i}  ${line(floor.name, f.at(-1)!, unit)}`);
    console.log(`          ${line(tern.name, t.at(-1)!, unit)}   ratio ${ratio.toFixed(2)}`);
  }
  const lat = t.flatMap((r) => r.latencies ?? []);
  const summary: RunSummary = {
    floor: median(f.map(rate)),
    tern: median(t.map(rate)),
    ratio: median(f.map((x, i) => (rate(x) > 0 ? rate(t[i]!) / rate(x) : 0))),
    ternLatency: lat.length > 0 ? { p50: percentile(lat, 50), p99: percentile(lat, 99) } : null,
  };
  console.log(`  median  ${floor.name.padEnd(8)} ${summary.floor.toFixed(0).padStart(8)} ${unit}`);
  console.log(`          ${tern.name.padEnd(8)} ${summary.tern.toFixed(0).padStart(8)} ${unit}`);
  console.log(`  median of per-pair ratios: ${summary.ratio.toFixed(2)}`);
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
