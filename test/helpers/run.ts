// `npm test`: the parallel group of test files (several mocha workers), then the serial group (one
// file at a time, alone on the machine); see test/helpers/groups.cjs. Each group's run ends with its own
// "<group> group: N passed, N failed" line; this prints the total as the last line, "N passed,
// N failed[, N skipped]", and writes it to TERN_TEST_RESULTS when set (CI reads it). Arguments
// (files, --grep …) make it one plain mocha run. `npm run test:quick` sets TERN_TEST_TIER=quick:
// the same run without the system tests (groups.cjs's SYSTEM). Before the total, a line gives the
// tier and how long the run took.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

const mocha = join('node_modules', 'mocha', 'bin', 'mocha.js');

function run(env: Record<string, string>, args: string[] = []): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mocha, ...args], { stdio: 'inherit', env: { ...process.env, ...env } });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function counts(file: string): Promise<Counts | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Counts;
  } catch {
    return null; // the run died before its reporter wrote anything
  }
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length > 0) return await run({}, args);
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'tern-test-'));
  try {
    const total: Counts = { passed: 0, failed: 0, skipped: 0 };
    let exit = 0;
    for (const group of ['parallel', 'serial']) {
      const results = join(dir, `${group}.json`);
      const code = await run({ TERN_TEST_GROUP: group, TERN_TEST_RESULTS: results });
      const c = await counts(results);
      if (code !== 0) exit = 1;
      // A group that died without counts is one failure, so the total can never read as a pass.
      if (!c) total.failed += 1;
      else for (const k of ['passed', 'failed', 'skipped'] as const) total[k] += c[k];
    }
    if (process.env.TERN_TEST_RESULTS) await writeFile(process.env.TERN_TEST_RESULTS, JSON.stringify(total));
    const skipped = total.skipped ? `, ${total.skipped} skipped` : '';
    const tier = process.env.TERN_TEST_TIER === 'quick' ? 'quick tier (no system tests)' : 'every test';
    const seconds = Math.round((Date.now() - started) / 1000);
    process.stdout.write(`\n${tier}: ${seconds} s\n${total.passed} passed, ${total.failed} failed${skipped}\n`);
    return exit || (total.failed > 0 ? 1 : 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
