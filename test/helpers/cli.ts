// The `tern` CLI run as an operator runs it: a subprocess with its environment, against a
// TestApi's database and Redis prefix (nothing else of the test's environment leaks in).
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import type { TestApi } from './stack.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function tern(api: TestApi, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/cli/tern.ts', ...args], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: api.db.url,
        REDIS_URL: api.config.redisUrl,
        REDIS_PREFIX: api.config.redisPrefix,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The JSON document a successful run printed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function cliJson(run: CliRun): any {
  expect(run.code, run.stderr).to.equal(0);
  return JSON.parse(run.stdout);
}
