// The Procfile itself, run by a Procfile runner (node-foreman's `nf`, as a Heroku-style platform
// runs it; docs/deployment.md) against fresh services: the test's own empty database and Redis
// prefix. `release` first, then two `web`, two `worker`, one `relay` and one `mx` process, with
// distinct ports (the runner's PORT for each web, RELAY_PORT and MX_PORT from the env file).
// Live mail goes end to end to a local smarthost: through either web process and the relay; and
// a reply reaches the MX and shows in GET /inbound.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import postgres from 'postgres';
import { portAnswers } from '../../api/cli/start/services.js';
import { createOrganization } from '../../shared/bootstrap.js';
import { mintKey } from '../../shared/keys.js';
import { provisionDomain } from '../../shared/domains/setup.js';
import { packageRoot } from '../../shared/paths.js';
import { ADMIN_URL, closeTestDb, createTestDb, dbUrl, type TestDb } from '../helpers/db.js';
import { freePort } from '../helpers/ports.js';
import { track } from '../helpers/resources.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { clearPrefix, TEST_REDIS_URL, testPrefix } from '../helpers/redis-prefix.js';
import { request } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const root = packageRoot();

function newest(dir: string): number {
  let latest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) latest = Math.max(latest, newest(p));
    else if (e.name.endsWith('.ts')) latest = Math.max(latest, statSync(p).mtimeMs);
  }
  return latest;
}

/** The Procfile runs dist/: build it when missing or older than the sources (`npm ci` builds it). */
function ensureBuilt(): void {
  const built = (() => {
    try {
      return statSync(join(root, 'dist/api/http.js')).mtimeMs;
    } catch {
      return 0;
    }
  })();
  const sources = Math.max(...['api', 'shared', 'workers'].map((d) => newest(join(root, d))));
  if (built < sources)
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { cwd: root });
}

interface Runner {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function nf(args: string[]): Runner {
  // Its own process group: every process the runner started can be stopped at once.
  const child = spawn(process.execPath, ['node_modules/foreman/nf.js', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Can a listener take this port on every address right now? */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, () => s.close(() => resolve(true)));
  });
}

/**
 * Two consecutive free ports for the runner's web=2 (it gives web.N the port base+N-1). Taken
 * below the kernel's ephemeral range, so that no outgoing connection of a busy test run can be
 * using base+1 by the time the second web process listens.
 */
async function twoFreePorts(): Promise<number> {
  for (;;) {
    const p = 20_000 + Math.floor(Math.random() * 10_000);
    if ((await bindable(p)) && (await bindable(p + 1))) return p;
  }
}

/** Runs `fn`; when it throws, the error carries what the runner's processes printed. */
async function withOutput<T>(runner: Runner, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    (err as Error).message += `\n--- the runner printed:\n${runner.output().slice(-8000)}`;
    throw err;
  }
}

describe('the Procfile under a Procfile runner (foreman)', function () {
  this.timeout(240_000);
  const dbName = `tern_procfile_${randomBytes(5).toString('hex')}`;
  let admin: postgres.Sql;
  let dir: string;
  let sink: Sink;

  before(async function () {
    this.timeout(400_000);
    ensureBuilt();
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${dbName}"`);
    dir = await mkdtemp(join(tmpdir(), 'tern-procfile-'));
    sink = await startSink();
  });
  after(async () => {
    await sink.close();
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
    await rm(dir, { recursive: true, force: true });
  });

  it('release, then web=2 worker=2 relay=1 mx=1: live mail through either web and the relay reaches the smarthost, a reply reaches the MX', async () => {
    const [base, relayPort, mxPort] = [await twoFreePorts(), await freePort(), await freePort()];
    const envFile = join(dir, 'tern.env');
    const prefix = testPrefix();
    const secretKey = randomBytes(36).toString('base64url');
    await writeFile(
      envFile,
      [
        `DATABASE_URL=${dbUrl(dbName)}`,
        `REDIS_URL=${TEST_REDIS_URL}`,
        `REDIS_PREFIX=${prefix}`,
        `SECRET_KEY=${secretKey}`,
        `BASE_URL=http://127.0.0.1:${base}`,
        'MX_HOST=mx.shop.test',
        `RELAY_PORT=${relayPort}`,
        `MX_PORT=${mxPort}`,
        `SMTP_SMARTHOST=smtp://127.0.0.1:${sink.port}/?tls_verify=false`,
        'DATABASE_POOL_MAX=4',
        'DELIVERY_SWEEP_SECONDS=3600',
        'LOG_LEVEL=info',
        '',
      ].join('\n'),
    );

    const release = nf(['start', '-j', 'Procfile', '-e', envFile, 'release']);
    expect(await release.exited, release.output()).to.equal(0);
    const sql = postgres(dbUrl(dbName), { max: 1, onnotice: () => {} });
    const formation = nf(['start', '-j', 'Procfile', '-e', envFile, '-p', String(base), 'web=2,worker=2,relay=1,mx=1']);
    const stop = track('foreman formation', async () => {
      if (formation.child.exitCode === null) {
        process.kill(-formation.child.pid!, 'SIGINT');
        const timer = setTimeout(() => process.kill(-formation.child.pid!, 'SIGKILL'), 30_000);
        await formation.exited;
        clearTimeout(timer);
      }
      try {
        process.kill(-formation.child.pid!, 'SIGKILL'); // anything the runner left behind
      } catch {
        // the group is gone
      }
    });
    try {
      const [migrations] = await sql<{ n: number }[]>`select count(*)::int as n from tern_migrations`;
      expect(migrations!.n, 'release applied every migration').to.equal(
        readdirSync(join(root, 'sql')).filter((f) => f.endsWith('.sql')).length,
      );
      const org = await createOrganization(sql, 'tern', { name: 'Shop', adminEmail: 'ops@shop.test' });
      await provisionDomain(
        sql,
        { mxHost: 'mx.shop.test', secretKey },
        { orgId: org.organization.id, name: 'shop.test', verified: true },
      );
      const { key, token } = await mintKey(sql, 'tern', {
        orgId: org.organization.id,
        name: 'send',
        mode: 'live',
        permission: 'SEND',
        domainIds: [],
        createdBy: null,
      });

      const webs = [`http://127.0.0.1:${base}`, `http://127.0.0.1:${base + 1}`];
      await withOutput(formation, () =>
        waitFor(
          'both web processes',
          async () =>
            (
              await Promise.all(
                webs.map((w) =>
                  fetch(`${w}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
                    (r) => r.ok,
                    () => false,
                  ),
                ),
              )
            ).every(Boolean),
          120_000,
        ),
      );
      await withOutput(formation, () =>
        waitFor('relay and mx', async () => (await portAnswers(relayPort)) && (await portAnswers(mxPort)), 60_000),
      );

      const ids: string[] = [];
      for (const [i, web] of webs.entries()) {
        const r = await request(web, 'POST', '/emails', {
          token,
          body: { from: 'Shop <orders@shop.test>', to: [`buyer${i}@dest.test`], subject: `Order ${i}`, text: 'Thanks' },
        });
        expect(r.status, r.text).to.equal(200);
        ids.push(r.json.id as string);
      }
      const relay = nodemailer.createTransport({
        host: '127.0.0.1',
        port: relayPort,
        auth: { user: key.id, pass: token },
        tls: { rejectUnauthorized: false },
      });
      const info = await relay.sendMail({
        from: 'orders@shop.test',
        to: 'buyer2@dest.test',
        subject: 'Order 2',
        text: 'Thanks',
      });
      relay.close();
      ids.push(/queued as (em_\w+)/.exec(info.response)![1]!);

      await withOutput(formation, () =>
        waitFor('three messages at the smarthost', () => Promise.resolve(sink.received.length >= 3), 60_000),
      );
      expect(sink.received.map((m) => m.rcptTo[0]).sort()).to.deep.equal([
        'buyer0@dest.test',
        'buyer1@dest.test',
        'buyer2@dest.test',
      ]);
      expect(sink.received.every((m) => m.raw.toString().startsWith('DKIM-Signature:'))).to.equal(true);
      for (const id of ids) {
        await waitFor(`${id} delivered`, async () => {
          const r = await request(webs[1]!, 'GET', `/emails/${id}`, { token });
          return r.json.recipients?.[0]?.status === 'delivered';
        });
      }

      const mx = nodemailer.createTransport({ host: '127.0.0.1', port: mxPort, tls: { rejectUnauthorized: false } });
      await mx.sendMail({
        from: 'buyer0@dest.test',
        to: 'orders@reply.shop.test',
        subject: 'Re: Order 0',
        text: 'Got it',
      });
      mx.close();
      await waitFor(
        'the reply in GET /inbound',
        async () => {
          const r = await request(webs[0]!, 'GET', '/inbound', { token });
          return r.json.data?.some((m: { subject: string }) => m.subject === 'Re: Order 0');
        },
        60_000,
      );

      // Every process of the formation ran (one that is slow to start on a busy machine has
      // printed nothing yet when the mail above is through: its line is waited for).
      for (const p of ['web.1', 'web.2', 'worker.1', 'worker.2', 'relay.1', 'mx.1']) {
        await waitFor(`output of ${p}`, async () => formation.output().includes(p), 60_000);
      }
    } finally {
      await sql.end();
      await stop();
      await clearPrefix(prefix);
    }
    expect(formation.child.exitCode !== null || formation.child.signalCode !== null).to.equal(true);
  });
});

/** Runs a Procfile command line as a runner would (`sh -c`), with `env` only; kills it after `ms`. */
async function runEntry(command: string, env: Record<string, string>, ms: number) {
  const child = spawn('sh', ['-c', command], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const code = await exited;
  clearTimeout(timer);
  return { code, out, killed: child.signalCode === 'SIGKILL' };
}

describe('the Procfile without SECRET_KEY', function () {
  this.timeout(180_000);
  let db: TestDb;

  before(async function () {
    this.timeout(400_000);
    ensureBuilt();
    db = await createTestDb();
  });
  after(async () => closeTestDb(db));

  it('web, worker, relay and mx exit 1 naming SECRET_KEY, with NODE_ENV unset or production; release runs without it', async () => {
    const entries = readFileSync(join(root, 'Procfile'), 'utf8')
      .split('\n')
      .map((line) => /^([a-z]+):\s*(.+)$/.exec(line.trim()))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ name: m[1]!, command: m[2]! }));
    expect(entries.map((e) => e.name).sort()).to.deep.equal(['mx', 'relay', 'release', 'web', 'worker']);
    const prefix = testPrefix();
    try {
      // Unset (what a bare `node dist/api/http.js` has) and production; `release` once is enough.
      for (const nodeEnv of [null, 'production']) {
        const runs = await Promise.all(
          entries
            .filter((e) => nodeEnv === null || e.name !== 'release')
            .map(async (e) => {
              const env: Record<string, string> = {
                PATH: process.env.PATH!,
                DATABASE_URL: db.url,
                REDIS_URL: TEST_REDIS_URL,
                REDIS_PREFIX: prefix,
                PORT: String(await freePort()),
                RELAY_PORT: String(await freePort()),
                MX_PORT: String(await freePort()),
                ...(nodeEnv ? { NODE_ENV: nodeEnv } : {}),
              };
              return { ...e, ...(await runEntry(e.command, env, 60_000)) };
            }),
        );
        for (const r of runs) {
          const what = `${r.name} (NODE_ENV=${nodeEnv ?? 'unset'}): ${r.out}`;
          expect(r.killed, `${what}\nstill running after 60 s`).to.equal(false);
          if (r.name === 'release') {
            expect(r.code, what).to.equal(0);
          } else {
            expect(r.code, what).to.equal(1);
            expect(r.out, what).to.contain('SECRET_KEY: is required');
          }
        }
      }
    } finally {
      await clearPrefix(prefix);
    }
  });
});
