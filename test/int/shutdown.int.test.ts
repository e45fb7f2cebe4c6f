// Two-stage graceful shutdown of the real entry points, run as child processes: the first
// SIGTERM stops intake and lets work in flight finish (exit 0); a second one exits at once.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { closeTestDb, createTestDb, type TestDb } from '../helpers/db.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { testPrefix } from '../helpers/stack.js';
import { freePort } from '../helpers/ports.js';

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  kill: () => Promise<void>;
}

function launch(entry: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const kill = track(`process ${entry}`, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, output: () => out, exited, kill };
}

async function until(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

/** Starts POST /keys and waits until the server has taken the request (100 Continue). */
async function inFlightRequest(
  port: number,
  token: string,
  agent?: Agent,
): Promise<{ req: ClientRequest; response: Promise<{ status: number; body: string }> }> {
  let continued!: () => void;
  const started = new Promise<void>((resolve) => (continued = resolve));
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/api/v1/keys',
    ...(agent ? { agent } : {}),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', expect: '100-continue' },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  response.catch(() => {});
  req.on('continue', () => continued());
  req.flushHeaders();
  await started;
  return { req, response };
}

describe('graceful shutdown', function () {
  this.timeout(60_000);
  let db: TestDb;
  let org: SeededOrg;
  const prefix = testPrefix();

  before(async () => {
    db = await createTestDb();
    org = await seedOrg(db.sql);
  });
  after(async () => closeTestDb(db));

  async function startWeb(): Promise<{ proc: Proc; port: number }> {
    const port = await freePort();
    const proc = launch('api/http.ts', { DATABASE_URL: db.url, REDIS_PREFIX: prefix, PORT: String(port) });
    await until('the web process to listen', 30_000, async () => {
      if (proc.child.exitCode !== null) throw new Error(`web exited early:\n${proc.output()}`);
      return await accepts(port);
    });
    return { proc, port };
  }

  it('web: the first SIGTERM finishes the request in flight, closes idle connections, exits 0', async () => {
    const { proc, port } = await startWeb();
    try {
      // Idle keep-alive connections, before and after the signal, must not hold the process
      // open (the client would keep them for a minute).
      const agent = new Agent({ keepAlive: true, timeout: 120_000 });
      const idle = await new Promise<IncomingMessage>((resolve) =>
        httpRequest({ host: '127.0.0.1', port, path: '/healthz', agent }, resolve).end(),
      );
      idle.resume();
      await new Promise((r) => idle.once('end', r));
      const { req, response } = await inFlightRequest(port, org.key.token, agent);

      proc.child.kill('SIGTERM');
      await until('the listener to close', 10_000, async () => !(await accepts(port)));
      req.end(JSON.stringify({ name: 'late', permission: 'SEND' }));
      const res = await response;
      expect(res.status, res.body).to.equal(201);
      expect(JSON.parse(res.body).name).to.equal('late');
      expect(await proc.exited).to.equal(0);
      expect(proc.output()).to.contain('"msg":"stopped"');
      agent.destroy();
    } finally {
      await proc.kill();
    }
  });

  it('web: a second SIGTERM exits at once, without waiting for the request in flight', async () => {
    const { proc, port } = await startWeb();
    try {
      const { req, response } = await inFlightRequest(port, org.key.token);
      proc.child.kill('SIGTERM');
      await until('the listener to close', 10_000, async () => !(await accepts(port)));
      proc.child.kill('SIGTERM');
      expect(await proc.exited).to.equal(1);
      expect(proc.output()).to.contain('SHUTDOWN_FORCED');
      req.destroy();
      await response.catch(() => {});
    } finally {
      await proc.kill();
    }
  });

  it('worker: SIGTERM stops it cleanly (exit 0)', async () => {
    const proc = launch('workers/main.ts', { DATABASE_URL: db.url, REDIS_PREFIX: prefix });
    try {
      await until('the worker to start', 30_000, () => {
        if (proc.child.exitCode !== null) throw new Error(`worker exited early:\n${proc.output()}`);
        return proc.output().includes('worker started');
      });
      proc.child.kill('SIGTERM');
      expect(await proc.exited).to.equal(0);
      expect(proc.output()).to.contain('"msg":"stopped"');
    } finally {
      await proc.kill();
    }
  });
});
