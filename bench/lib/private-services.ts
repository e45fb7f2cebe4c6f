// A private Postgres cluster and a private Redis, each on a free loopback port with its data in
// a folder of its own (and, for failover faults, a Postgres primary with a synchronous standby
// and a Redis master with a replica and three Sentinels), for fault tests and `npm run chaos` (never the shared services: those
// are stopped, flushed and restarted here). Postgres uses the Debian binaries
// (/usr/lib/postgresql/<version>/bin) and runs as the `postgres` user when we are root.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFile, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';

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

/**
 * `statements`: load pg_stat_statements (bench/e2e counts the statements per message). `also`: one
 * more address to listen on besides 127.0.0.1 (a bridge address that network namespaces reach),
 * trusted for its /24 like loopback.
 */
export async function startPrivatePostgres(
  opts: { statements?: boolean; also?: string } = {},
): Promise<PrivatePostgres> {
  const bin = await pgBin();
  const as = ids();
  const dir = await mkdtemp(join(tmpdir(), 'tern-pg-'));
  if (as) await chown(dir, as.uid, as.gid);
  const data = join(dir, 'data');
  const port = await freeLoopbackPort();
  await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8'], as);
  const preload = opts.statements ? ' -c shared_preload_libraries=pg_stat_statements' : '';
  if (opts.also) await appendFile(join(data, 'pg_hba.conf'), `host all all ${opts.also}/24 trust\n`);
  const listen = opts.also ? `127.0.0.1,${opts.also}` : '127.0.0.1';
  const serverOpts = `-p ${port} -h ${listen} -k ${dir} -c fsync=off -c max_connections=200${preload}`;
  const pgCtl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], as);
  const start = () => pgCtl('-o', serverOpts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start').then(() => {});
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

/** `also`: one more address to listen on besides 127.0.0.1 (see startPrivatePostgres). */
export async function startPrivateRedis(opts: { persist?: boolean; also?: string } = {}): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'tern-redis-'));
  const port = await freeLoopbackPort();
  let child: ChildProcess | null = null;
  const args = [
    '--port',
    String(port),
    '--bind',
    ...(opts.also ? ['127.0.0.1', opts.also, '--protected-mode', 'no'] : ['127.0.0.1']),
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

/** Spawns redis-server with `args` and resolves once `port` accepts connections. */
async function spawnRedisServer(args: string[], port: number): Promise<ChildProcess> {
  const c = spawn('redis-server', args, { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (c.exitCode !== null || c.signalCode !== null) throw new Error(`redis-server ${args[0]} exited at start`);
    if (await portTaken(port)) return c;
    if (Date.now() > deadline) throw new Error(`redis-server ${args[0]} did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(true));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
  });
}

async function killChild(c: ChildProcess | null): Promise<void> {
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGKILL');
  await exited;
}

async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const SENTINEL_MASTER = 'tern';

export interface PrivateSentinelSet {
  /** `redis+sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/tern` */
  url: string;
  /** The folder of the data and the Sentinels' configuration files, removed by `destroy`. */
  dir: string;
  /** The port of the Redis the Sentinels name as master now. */
  masterPort(): Promise<number>;
  /** Every running process's id (master, replica, Sentinels), for a reaper. */
  pids(): number[];
  /** SIGKILL of the current master; resolves with its port. */
  killMaster(): Promise<number>;
  /** Resolves once the Sentinels name a master other than `port` and it answers as one. */
  waitFailover(port: number, ms?: number): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A master, one replica and three Sentinels (quorum 2) on free loopback ports, both Redis
 * append-only with fsync on every write. A master is judged down after 1 s without an answer,
 * so a SIGKILL of it ends in a promoted replica within seconds.
 */
export async function startPrivateSentinelSet(): Promise<PrivateSentinelSet> {
  const dir = await mkdtemp(join(tmpdir(), 'tern-sentinel-'));
  const children = new Map<number, ChildProcess>();
  const destroy = async () => {
    await Promise.all([...children.values()].map(killChild));
    await rm(dir, { recursive: true, force: true });
  };
  const ask = async <T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> => {
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 });
    r.on('error', () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  };
  try {
    const [master, replica] = [await freeLoopbackPort(), await freeLoopbackPort()];
    // prettier-ignore
    const redisArgs = (port: number) => ['--port', String(port), '--bind', '127.0.0.1', '--dir', join(dir, String(port)),
      '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction'];
    for (const port of [master, replica]) await mkdir(join(dir, String(port)));
    children.set(master, await spawnRedisServer(redisArgs(master), master));
    children.set(
      replica,
      await spawnRedisServer([...redisArgs(replica), '--replicaof', '127.0.0.1', String(master)], replica),
    );
    const sentinels = [await freeLoopbackPort(), await freeLoopbackPort(), await freeLoopbackPort()];
    for (const port of sentinels) {
      const conf = join(dir, `sentinel-${port}.conf`);
      await writeFile(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${master} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 10000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
          '',
        ].join('\n'),
      );
      children.set(port, await spawnRedisServer([conf, '--sentinel'], port));
    }
    await until(
      'the replica in sync and every Sentinel knowing the replica and the two other Sentinels',
      async () => {
        const info = await ask(master, (r) => r.info('replication'));
        if (!/slave0:.*state=online/.test(info)) return false;
        for (const port of sentinels) {
          const [replicas, others] = await ask(port, async (r) => [
            (await r.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as unknown[],
            (await r.call('SENTINEL', 'SENTINELS', SENTINEL_MASTER)) as unknown[],
          ]);
          if (replicas.length < 1 || others.length < 2) return false;
        }
        return true;
      },
      30_000,
    );
    const masterPort = async (): Promise<number> => {
      for (const port of sentinels) {
        try {
          const addr = await ask(port, (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER));
          return Number((addr as string[])[1]);
        } catch {
          // this Sentinel is away: ask the next
        }
      }
      throw new Error('no Sentinel answered');
    };
    return {
      url: `redis+sentinel://${sentinels.map((p) => `127.0.0.1:${p}`).join(',')}/${SENTINEL_MASTER}`,
      dir,
      masterPort,
      pids: () => [...children.values()].flatMap((c) => (c.exitCode === null && c.pid ? [c.pid] : [])),
      async killMaster() {
        const port = await masterPort();
        await killChild(children.get(port) ?? null);
        return port;
      },
      async waitFailover(old, ms = 60_000) {
        await until(
          'a replica promoted by the Sentinels',
          async () => {
            const port = await masterPort();
            return port !== old && (await ask(port, (r) => r.info('replication'))).includes('role:master');
          },
          ms,
        );
      },
      destroy,
    };
  } catch (err) {
    await destroy();
    throw err;
  }
}

export interface PrivatePostgresPair {
  /** The primary's and the standby's ports. */
  ports: [number, number];
  /** `postgres://postgres@127.0.0.1:p1,127.0.0.1:p2/<db>?target_session_attrs=read-write` */
  urlFor(db: string): string;
  /** Admin URL (database `postgres`) of the pair. */
  url: string;
  /** Both clusters' folders, removed by `destroy`. */
  dir: string;
  /** How to stop each cluster from outside this process (bench/lib/reaper.ts). */
  pgCtls: PrivatePostgres['pgCtl'][];
  /** SIGKILL of the primary's postmaster and every backend of it, at once. */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote` of the standby, waiting until it accepts writes. */
  promoteStandby(): Promise<void>;
  destroy(): Promise<void>;
}

/** The postmaster's process id and its children's (`/proc/<pid>/stat` field 4 is the parent). */
async function clusterPids(data: string): Promise<number[]> {
  const postmaster = Number((await readFile(join(data, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const children: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) children.push(Number(name));
  }
  return [postmaster, ...children];
}

/**
 * A primary and a streaming standby (`pg_basebackup -R`) on free loopback ports; the primary
 * waits for the standby on every commit (synchronous_standby_names = '*'), so a commit the
 * primary acknowledged is on the standby too when the primary dies.
 */
export async function startPrivatePostgresPair(): Promise<PrivatePostgresPair> {
  const bin = await pgBin();
  const as = ids();
  const dir = await mkdtemp(join(tmpdir(), 'tern-pg-pair-'));
  if (as) await chown(dir, as.uid, as.gid);
  const [primaryData, standbyData] = [join(dir, 'primary'), join(dir, 'standby')];
  const ports: [number, number] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const pgCtl = (data: string, ...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], as);
  // prettier-ignore
  const opts = (port: number) => `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c max_connections=200 ` +
    `-c wal_level=replica -c max_wal_senders=5 -c wal_sender_timeout=5s ` +
    `-c wal_receiver_status_interval=1s`;
  const start = (data: string, port: number, log: string) =>
    pgCtl(data, '-o', opts(port), '-l', join(dir, log), '-w', '-t', '60', 'start');
  const destroy = async () => {
    for (const data of [primaryData, standbyData]) await pgCtl(data, '-m', 'immediate', '-w', 'stop').catch(() => {});
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run(
      join(bin, 'initdb'),
      ['-D', primaryData, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8'],
      as,
    );
    // In the primary's own settings: the standby, once promoted, has none of its own to wait for.
    await appendFile(join(primaryData, 'postgresql.auto.conf'), "synchronous_standby_names = '*'\n");
    await start(primaryData, ports[0], 'primary.log');
    // prettier-ignore
    await run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(ports[0]), '-U', 'postgres', '-D', standbyData,
      '-R', '-X', 'stream', '-c', 'fast'], as);
    await appendFile(join(standbyData, 'postgresql.auto.conf'), "synchronous_standby_names = ''\n");
    await start(standbyData, ports[1], 'standby.log');
    const primary = postgres(`postgres://postgres@127.0.0.1:${ports[0]}/postgres`, { max: 1, onnotice: () => {} });
    try {
      await until(
        'the standby streaming synchronously',
        async () => (await primary`select 1 from pg_stat_replication where sync_state = 'sync'`).length === 1,
        30_000,
      );
    } finally {
      await primary.end({ timeout: 1 });
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  const hosts = ports.map((p) => `127.0.0.1:${p}`).join(',');
  const urlFor = (db: string) => `postgres://postgres@${hosts}/${db}?target_session_attrs=read-write`;
  const uidGid = { uid: as?.uid ?? null, gid: as?.gid ?? null };
  return {
    ports,
    urlFor,
    url: urlFor('postgres'),
    dir,
    pgCtls: [primaryData, standbyData].map((data) => ({ bin: join(bin, 'pg_ctl'), data, ...uidGid })),
    async killPrimary() {
      for (const pid of await clusterPids(primaryData)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    },
    async promoteStandby() {
      await pgCtl(standbyData, '-w', '-t', '60', 'promote');
    },
    destroy,
  };
}
