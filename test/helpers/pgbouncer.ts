// A local PgBouncer for tests (Debian's `pgbouncer` package): transaction pooling on a free
// loopback port in front of the shared Postgres (ADMIN_URL's host), every database by name, a
// userlist with trust auth. Few server connections, so that clients' transactions really do move
// between them. Stopped and its folder removed by close().
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_URL } from './db.js';
import { freePort } from './ports.js';
import { accepts } from './processes.js';
import { track } from './resources.js';
import { waitFor } from './wait.js';

export interface PgBouncer {
  port: number;
  /** A URL of `database` through the pooler. */
  urlFor(database: string): string;
  output(): string;
  close(): Promise<void>;
}

export async function startPgBouncer(opts: { serverConnections?: number } = {}): Promise<PgBouncer> {
  const upstream = new URL(ADMIN_URL);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const dir = await mkdtemp(join(tmpdir(), 'tern-pgbouncer-'));
  // PgBouncer refuses to run as root; as root it drops to the Postgres user, which reads the folder.
  await chmod(dir, 0o755);
  const port = await freePort();
  await writeFile(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      `default_pool_size = ${opts.serverConnections ?? 4}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  // Debian installs it in /usr/sbin, which a non-root PATH may lack.
  const bin = existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';
  const child = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = track('pgbouncer', async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.kill('SIGINT'); // immediate shutdown
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  });
  try {
    await waitFor(
      'pgbouncer listening',
      () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited ${child.exitCode}: ${out}`);
        return accepts(port);
      },
      15_000,
    );
  } catch (err) {
    await close();
    throw err;
  }
  return {
    port,
    urlFor: (database) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    output: () => out,
    close,
  };
}
