// A private Postgres cluster and a private Redis, each on a free loopback port with its data in
// a folder of its own, for fault tests and `npm run chaos` (never the shared services: those
// are stopped, flushed and restarted here). Postgres uses the Debian binaries
// (/usr/lib/postgresql/<version>/bin) and runs as the `postgres` user when we are root.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function freeLoopbackPort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function ids(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

async function pgBin(): Promise<string> {
  const root = '/usr/lib/postgresql';
  const versions = (await readdir(root).catch(() => [] as string[])).sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error('no Postgres binaries under /usr/lib/postgresql (apt install postgresql)');
  return join(root, versions[0]!, 'bin');
}

function run(cmd: string, args: string[], as: { uid: number; gid: number } | null): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { ...(as ?? {}), encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

export interface PrivatePostgres {
  port: number;
  /** The cluster's folder (data, socket, log), removed by `destroy`. */
  dir: string;
  /** How to stop the cluster from outside this process (bench/lib/reaper.ts). */
  pgCtl: { bin: string; data: string; uid: number | null; gid: number | null };
  /** Admin URL (database `postgres`); `urlFor(name)` for another database. */
  url: string;
  urlFor(db: string): string;
  /** `pg_ctl -m immediate stop`: every backend killed at once, no shutdown checkpoint. */
  stopImmediate(): Promise<void>;
  start(): Promise<void>;
  /** Stops (fast) and removes the cluster. */
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await pgBin();
  const as = ids();
  const dir = await mkdtemp(join(tmpdir(), 'tern-pg-'));
  if (as) await chown(dir, as.uid, as.gid);
  const data = join(dir, 'data');
  const port = await freeLoopbackPort();
  await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8'], as);
  const opts = `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c max_connections=200`;
  const pgCtl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], as);
  const start = () => pgCtl('-o', opts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start').then(() => {});
  await start();
  const urlFor = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    port,
    dir,
    pgCtl: { bin: join(bin, 'pg_ctl'), data, uid: as?.uid ?? null, gid: as?.gid ?? null },
    url: urlFor('postgres'),
    urlFor,
    stopImmediate: () => pgCtl('-m', 'immediate', '-w', 'stop').then(() => {}),
    start,
    async destroy() {
      await pgCtl('-m', 'fast', '-w', 'stop').catch(() => {}); // already stopped (a fault the run made)
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** The append-only file's folder, removed by `destroy`. */
  dir: string;
  /** The running redis-server's process id (a new one after each `start`), null when stopped. */
  pid(): number | null;
  /** SIGKILL: whatever was not persisted is lost (append-only file, fsync every write, keeps it). */
  kill(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivateRedis(opts: { persist?: boolean } = {}): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'tern-redis-'));
  const port = await freeLoopbackPort();
  let child: ChildProcess | null = null;
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    opts.persist === false ? 'no' : 'yes',
    '--appendfsync',
    'always',
    '--maxmemory-policy',
    'noeviction',
  ];
  const start = async () => {
    const c = spawn('redis-server', args, { stdio: 'ignore' });
    child = c;
    await new Promise<void>((resolve, reject) => {
      c.once('error', reject);
      const deadline = Date.now() + 10_000;
      const probe = () => {
        const s = createServer();
        s.once('error', () => resolve()); // the port is taken: Redis listens
        s.listen(port, '127.0.0.1', () => {
          s.close();
          if (c.exitCode !== null || Date.now() > deadline) reject(new Error('redis-server did not start'));
          else setTimeout(probe, 50);
        });
      };
      probe();
    });
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    pid: () => {
      const c = child as ChildProcess | null;
      return c && c.exitCode === null && c.signalCode === null ? (c.pid ?? null) : null;
    },
    kill,
    start,
    async destroy() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
