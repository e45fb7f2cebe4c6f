// Command-line options shared by every benchmark: --pairs N (≥ 1; 5 or more for real figures),
// --slice S (seconds per slice), --connections C, --messages N
// (bench/e2e's message count). Other arguments name the benchmarks to run.
import type { MeasureOptions } from './measure.js';

export function parseArgs(argv: string[]): { names: string[]; measure: MeasureOptions } {
  const measure: MeasureOptions = { pairs: 5, sliceSeconds: 3, connections: 50 };
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0) throw new Error(`bench: ${a} needs a positive number`);
      return v;
    };
    if (a === '--pairs') measure.pairs = Math.round(num());
    else if (a === '--slice') measure.sliceSeconds = num();
    else if (a === '--connections') measure.connections = Math.round(num());
    else if (a === '--messages') measure.messages = Math.round(num());
    else if (a.startsWith('--')) throw new Error(`bench: unknown option ${a}`);
    else names.push(a);
  }
  return { names, measure };
}
