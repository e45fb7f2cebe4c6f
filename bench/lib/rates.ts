// Alternating A/B measurement for work that is not an HTTP request (SMTP sessions, queue
// throughput): each side is a function that does one batch and returns its rate (per second).
// Floor and Tern alternate, as in measure.ts, so that a busy machine slows both alike.
import { median } from './measure.js';

export interface RateTarget {
  name: string;
  /** Runs one batch; returns items per second. */
  run(): Promise<number>;
}

export interface RateSummary {
  floor: number;
  tern: number;
  /** Median of the per-pair ratios tern / floor. */
  ratio: number;
}

export async function alternateRates(
  floor: RateTarget,
  tern: RateTarget,
  opts: { pairs: number; unit: string },
): Promise<RateSummary> {
  // Warm-up: connections, JIT, prepared statements.
  await floor.run();
  await tern.run();
  const f: number[] = [];
  const t: number[] = [];
  const row = (name: string, rate: number) => `${name.padEnd(10)} ${rate.toFixed(0).padStart(8)} ${opts.unit}`;
  for (let i = 0; i < opts.pairs; i++) {
    f.push(await floor.run());
    t.push(await tern.run());
    console.log(`  pair ${i + 1}  ${row(floor.name, f[i]!)}`);
    console.log(`          ${row(tern.name, t[i]!)}   ratio ${(t[i]! / f[i]!).toFixed(2)}`);
  }
  const summary = { floor: median(f), tern: median(t), ratio: median(f.map((x, i) => t[i]! / x)) };
  console.log(`  median  ${row(floor.name, summary.floor)}`);
  console.log(`          ${row(tern.name, summary.tern)}`);
  console.log(`  median of per-pair ratios: ${summary.ratio.toFixed(2)}`);
  return summary;
}
