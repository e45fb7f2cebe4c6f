// Runs every benchmark of bench/ (each file exporting `run`), or those named on the command
// line: `npm run bench -- api --pairs 7 --slice 5`. Figures only; no assertion on time.
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { MeasureOptions } from './lib/measure.js';
import { parseArgs } from './lib/options.js';

interface Bench {
  description?: string;
  run(measure: MeasureOptions): Promise<void>;
}

async function main(): Promise<void> {
  const { names, measure } = parseArgs(process.argv.slice(2));
  const dir = dirname(fileURLToPath(import.meta.url));
  const files = readdirSync(dir).filter(
    (f) => /\.(js|ts)$/.test(f) && !f.endsWith('.d.ts') && !/^run\.(js|ts)$/.test(f),
  );
  const available = new Map(files.map((f) => [basename(f).replace(/\.(js|ts)$/, ''), join(dir, f)]));
  const wanted = names.length > 0 ? names : [...available.keys()].sort();
  const unknown = wanted.filter((n) => !available.has(n));
  if (unknown.length > 0) {
    throw new Error(`bench: unknown benchmark(s) ${unknown.join(', ')}; known: ${[...available.keys()].join(', ')}`);
  }
  for (const name of wanted) {
    const mod = (await import(pathToFileURL(available.get(name)!).href)) as Bench;
    console.log(`\n== ${name}${mod.description ? `: ${mod.description}` : ''}`);
    await mod.run(measure);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
