// A private rspamd for tests (Debian's `rspamd` package): its own configuration, run, database
// and log directories under a temporary folder, one `normal` worker on a free loopback port (the
// /checkv2 HTTP endpoint), the stock rules of /etc/rspamd, no Redis, no network look-ups (its DNS
// resolver points at a closed port) and no hyperscan compilation (a quick start). `null` when
// rspamd is not installed: the tests that need it skip, saying so.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { track } from './resources.js';
import { waitFor } from './wait.js';

export interface TestRspamd {
  url: string;
  close(): Promise<void>;
}

const CONFDIR = '/etc/rspamd';

/** Why rspamd cannot run here, or null when it can. */
export function rspamdMissing(): string | null {
  if (!existsSync(join(CONFDIR, 'common.conf'))) return `no rspamd configuration in ${CONFDIR}`;
  const probe = spawnSync('rspamd', ['--version'], { encoding: 'utf8' });
  return probe.error ? 'rspamd is not installed (Debian: apt-get install rspamd)' : null;
}

export async function startRspamd(): Promise<TestRspamd | null> {
  if (rspamdMissing()) return null;
  const dir = await mkdtemp(join(tmpdir(), 'tern-rspamd-'));
  for (const sub of ['run', 'db', 'log', 'local']) await mkdir(join(dir, sub));
  const port = await freePort();
  const deadPort = await freePort();
  await writeFile(
    join(dir, 'rspamd.conf'),
    `.include "$CONFDIR/common.conf"
options {
    pidfile = "$RUNDIR/rspamd.pid";
    .include "$CONFDIR/options.inc"
    disable_hyperscan = true;
    dns { nameserver = ["127.0.0.1:${deadPort}"]; timeout = 0.5s; retransmits = 1; }
}
logging { type = "file"; filename = "$LOGDIR/rspamd.log"; level = "warning"; }
worker "normal" {
    bind_socket = "127.0.0.1:${port}";
    .include "$CONFDIR/worker-normal.inc"
    count = 1;
}
`,
  );
  const vars = {
    CONFDIR,
    LOCAL_CONFDIR: join(dir, 'local'),
    DBDIR: join(dir, 'db'),
    RUNDIR: join(dir, 'run'),
    LOGDIR: join(dir, 'log'),
  };
  const child = spawn(
    'rspamd',
    ['-f', '-i', '-c', join(dir, 'rspamd.conf'), ...Object.entries(vars).map(([k, v]) => `--var=${k}=${v}`)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = track(`rspamd 127.0.0.1:${port}`, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    // Loading the stock rules takes seconds, and much longer on a loaded machine.
    await waitFor(
      'rspamd answering /ping',
      async () => {
        if (child.exitCode !== null) throw new Error(`rspamd exited ${child.exitCode}: ${out}`);
        return await fetch(`${url}/ping`).then(
          (r) => r.ok,
          () => false,
        );
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
  } catch (err) {
    await close();
    throw err;
  }
  return { url, close };
}
