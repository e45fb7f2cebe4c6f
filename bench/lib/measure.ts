// The measuring half of every benchmark: a floor and Tern are loaded in alternating short slices
// (A B A B …) so that a busy machine slows both alike, and the figures are medians. The load
// generator (autocannon) runs in this process; the servers run in child processes, so they do
// not share its event loop.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** POST with this body (JSON text) instead of GET. */
  body?: string;
  /** Work items per request (e.g. 100 emails per batch): printed as items/s beside req/s. */
  itemsPerRequest?: number;
  /** Name of one item for the items/s column (default "items"). */
  item?: string;
  /** The server's process: its CPU time per request is printed (Linux /proc). */
  pid?: number;
}

export interface SliceResult {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  /** Answers that were not 2xx, plus socket errors and timeouts: should be 0. */
  failures: number;
  /** CPU time of the server process per request, µs (NaN when unknown). */
  cpuUs: number;
}

export interface MeasureOptions {
  pairs: number;
  sliceSeconds: number;
  connections: number;
  /** Messages of a pipeline run (bench/e2e; default 10,000). */
  messages?: number;
}

export interface Summary {
  floor: { rps: number; p50: number; p99: number; cpuUs: number };
  tern: { rps: number; p50: number; p99: number; cpuUs: number };
  /** Median of the per-pair ratios tern rps / floor rps. */
  ratio: number;
  failures: number;
}

/** User + system CPU seconds of a process so far, or NaN where /proc is not readable. */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th there.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

async function slice(target: Target, opts: MeasureOptions): Promise<SliceResult> {
  const cpu0 = cpuSeconds(target.pid);
  const r = await autocannon({
    url: target.url,
    connections: opts.connections,
    duration: opts.sliceSeconds,
    headers: target.headers ?? {},
    ...(target.body !== undefined ? { method: 'POST' as const, body: target.body } : {}),
  });
  return {
    target: target.name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    failures: r.non2xx + r.errors + r.timeouts,
    cpuUs: ((cpuSeconds(target.pid) - cpu0) * 1e6) / Math.max(1, r.requests.total),
  };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const fmt = (r: { rps: number; p50: number; p99: number; cpuUs: number }, t: Target): string => {
  const items = t.itemsPerRequest
    ? `   ${(r.rps * t.itemsPerRequest).toFixed(0).padStart(8)} ${t.item ?? 'items'}/s`
    : '';
  const cpu = Number.isFinite(r.cpuUs) ? `   server cpu ${r.cpuUs.toFixed(0).padStart(4)} µs/req` : '';
  return `${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(1).padStart(6)} ms   p99 ${r.p99.toFixed(1).padStart(6)} ms${items}${cpu}`;
};

/** Warms both targets, then runs `pairs` alternating slices and prints every figure. */
export async function alternate(floor: Target, tern: Target, opts: MeasureOptions): Promise<Summary> {
  const warm = { ...opts, sliceSeconds: 1 };
  await slice(floor, warm);
  await slice(tern, warm);
  const floors: SliceResult[] = [];
  const terns: SliceResult[] = [];
  for (let i = 0; i < opts.pairs; i++) {
    const f = await slice(floor, opts);
    const t = await slice(tern, opts);
    floors.push(f);
    terns.push(t);
    const ratio = f.rps > 0 ? t.rps / f.rps : 0;
    console.log(`  pair ${i + 1}  ${floor.name.padEnd(6)} ${fmt(f, floor)}`);
    console.log(`          ${tern.name.padEnd(6)} ${fmt(t, tern)}   ratio ${ratio.toFixed(2)}`);
  }
  const med = (xs: SliceResult[]) => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    cpuUs: median(xs.map((x) => x.cpuUs)),
  });
  const summary: Summary = {
    floor: med(floors),
    tern: med(terns),
    ratio: median(floors.map((f, i) => (f.rps > 0 ? terns[i]!.rps / f.rps : 0))),
    failures: [...floors, ...terns].reduce((n, s) => n + s.failures, 0),
  };
  console.log(`  median  ${floor.name.padEnd(6)} ${fmt(summary.floor, floor)}`);
  console.log(`          ${tern.name.padEnd(6)} ${fmt(summary.tern, tern)}`);
  console.log(`  median of per-pair ratios: ${summary.ratio.toFixed(2)}`);
  if (summary.failures > 0) console.log(`  WARNING: ${summary.failures} answers were not 2xx (figures are not valid)`);
  return summary;
}
