// `npm start` end to end: the launcher run from source (tsx) on an empty database, its first-run
// demo key used against the web process it started, then stopped with SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import postgres from 'postgres';
import { portAnswers } from '../../api/cli/start/services.js';
import { ADMIN_URL, dbUrl } from '../helpers/db.js';
import { track } from '../helpers/resources.js';
import { request, testPrefix } from '../helpers/stack.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Launch {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the launcher if it still runs (the test failed half-way). */
  close: () => Promise<void>;
}

function launch(env: Record<string, string>, isolated = false): Launch {
  const node = [process.execPath, '--import', 'tsx', 'api/cli/start.ts'];
  // Isolated: a network namespace of its own whose only interface is loopback, i.e. a machine
  // where nothing answers on the Postgres and Redis ports. `exec` keeps the launcher's pid.
  const [cmd, ...args] = isolated
    ? ['unshare', '-n', 'sh', '-c', `ip link set lo up && exec ${node.map((a) => `'${a}'`).join(' ')}`]
    : node;
  const child = spawn(cmd!, args, {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const close = track('npm start launcher', async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, output: () => out, exited, close };
}

/** Resolves once the launcher printed `marker`; rejects if it exits first. */
async function waitForOutput(l: Launch, marker: string): Promise<void> {
  let exited = false;
  void l.exited.then(() => (exited = true));
  while (!l.output().includes(marker)) {
    if (exited) throw new Error(`launcher exited before "${marker}":\n${l.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('npm start', function () {
  this.timeout(120_000);
  const dbName = `tern_start_${randomBytes(5).toString('hex')}`;
  let dataDir: string;
  let admin: postgres.Sql;
  let baseEnv: Record<string, string>;

  before(async () => {
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${dbName}"`);
    dataDir = await mkdtemp(join(tmpdir(), 'tern-data-'));
    await chmod(dataDir, 0o755);
    baseEnv = {
      DATABASE_URL: dbUrl(dbName),
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_PREFIX: testPrefix(),
      TERN_DATA_DIR: dataDir,
    };
  });
  after(async () => {
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('brings the stack up on an empty database, serves the printed key, and stops cleanly on SIGTERM', async () => {
    const [port, relayPort, mxPort] = [await freePort(), await freePort(), await freePort()];
    const l = launch({ ...baseEnv, PORT: String(port), RELAY_PORT: String(relayPort), MX_PORT: String(mxPort) });
    try {
      await checkFirstRun(l, port, relayPort, mxPort);
    } finally {
      await l.close();
    }
  });

  async function checkFirstRun(l: Launch, port: number, relayPort: number, mxPort: number): Promise<void> {
    await waitForOutput(l, 'Ctrl-C stops it.');
    const out = l.output();
    const token = /ADMIN key\s+(tern_live_[0-9A-Za-z]+)/.exec(out)?.[1];
    expect(token, out).to.be.a('string');
    expect(out).to.contain(`http://localhost:${port}/api/v1`);
    expect(out).to.contain(`curl -H "Authorization: Bearer ${token}" http://localhost:${port}/api/v1/keys/me`);
    expect(out).to.contain(`localhost:${relayPort}`).and.to.contain(`localhost:${mxPort}`);
    expect(out).to.contain('demo@tern.local');

    const me = await request(`http://127.0.0.1:${port}`, 'GET', '/keys/me', { token });
    expect(me.status).to.equal(200);
    expect(me.json).to.include({ permission: 'ADMIN', mode: 'live', name: 'Admin key' });

    const sql = postgres(dbUrl(dbName), { max: 1, onnotice: () => {} });
    const orgs = await sql<{ name: string }[]>`select name from organizations`;
    await sql.end();
    expect(orgs.map((o) => o.name)).to.deep.equal(['Demo']);
    expect((await readFile(join(dataDir, 'secret'), 'utf8')).trim()).to.have.length.of.at.least(32);

    l.child.kill('SIGTERM');
    const { code, signal } = await l.exited;
    expect({ code, signal }, l.output()).to.deep.equal({ code: 0, signal: null });
    expect(await portAnswers(port), 'the web process is gone').to.equal(false);
  }

  it('on a machine where no Postgres or Redis answers, starts embedded ones under .data/', async function () {
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-n', 'true']).status !== 0) this.skip();
    const dir = await mkdtemp(join(tmpdir(), 'tern-iso-'));
    await chmod(dir, 0o755);
    const l = launch({ TERN_DATA_DIR: dir, PORT: '3000' }, true);
    try {
      await waitForOutput(l, 'Ctrl-C stops it.');
      const out = l.output();
      expect(out).to.match(/Postgres: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/tern \(embedded\)/);
      expect(out).to.match(/Redis: redis:\/\/127\.0\.0\.1:\d+ \(embedded\)/);
      expect(out)
        .to.contain('created database tern')
        .and.to.match(/ADMIN key\s+tern_live_/);
      l.child.kill('SIGINT');
      const { code } = await l.exited;
      expect(code, l.output()).to.equal(0);
      expect(existsSync(join(dir, 'postgres', 'postmaster.pid')), 'embedded Postgres stopped').to.equal(false);
    } finally {
      await l.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stops everything and exits 1 naming the process that died (web cannot listen)', async () => {
    const blocker: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const l = launch({
        ...baseEnv,
        PORT: String(port),
        RELAY_PORT: String(await freePort()),
        MX_PORT: String(await freePort()),
      });
      try {
        const { code } = await l.exited;
        expect(code, l.output()).to.equal(1);
        expect(l.output()).to.match(/web exited unexpectedly \(code 1\): stopping the others/);
        expect(l.output(), 'not a first run any more').not.to.contain('First run');
      } finally {
        await l.close();
      }
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
