// .data/ (or TERN_DATA_DIR): the development launcher's folder. `npm start` keeps there the
// SECRET_KEY it generated (`secret`) and the Postgres and Redis it uses (`env`, written at every
// start), so that the `tern` CLI run in the checkout reaches the same ones when DATABASE_URL,
// REDIS_URL and SECRET_KEY are unset (DESIGN §12). A production install has no .data/: the CLI
// then reads the environment only.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../../shared/paths.js';

type Env = Record<string, string | undefined>;

/** The variables `npm start` records for the CLI. */
export const RECORDED = ['DATABASE_URL', 'REDIS_URL', 'REDIS_PREFIX'] as const;

export function dataDir(env: Env = process.env): string {
  return env.TERN_DATA_DIR || join(packageRoot(), '.data');
}

/** Records the resolved URLs (mode 600: the embedded Postgres URL carries its password). */
export async function recordLauncherEnv(dir: string, env: Env): Promise<void> {
  const lines = RECORDED.filter((k) => env[k]).map((k) => `${k}=${env[k]}`);
  await writeFile(
    join(dir, 'env'),
    `# written by npm start: the services it uses (read by the tern CLI)\n${lines.join('\n')}\n`,
    {
      mode: 0o600,
    },
  );
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * The environment completed from .data/: each of DATABASE_URL, REDIS_URL (from `env`) and
 * SECRET_KEY (from `secret`) that is unset. `from` names what was taken, for messages.
 */
export function withLauncherEnv(env: Env = process.env): { env: Env; from: string[]; dir: string } {
  const dir = dataDir(env);
  const out: Env = { ...env };
  const from: string[] = [];
  for (const line of (readText(join(dir, 'env')) ?? '').split('\n')) {
    const m = /^([A-Z_]+)=(.+)$/.exec(line.trim());
    if (!m || !(RECORDED as readonly string[]).includes(m[1]!) || env[m[1]!]) continue;
    out[m[1]!] = m[2]!;
    from.push(m[1]!);
  }
  const secret = env.SECRET_KEY ? null : readText(join(dir, 'secret'))?.trim();
  if (secret && secret.length >= 32) {
    out.SECRET_KEY = secret;
    from.push('SECRET_KEY');
  }
  return { env: out, from, dir };
}
