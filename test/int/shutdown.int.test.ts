// Two-stage graceful shutdown of the real entry points, run as child processes: the first
// SIGTERM stops intake and lets work in flight finish (exit 0); a second one exits at once. A
// worker lets its SMTP transaction in flight finish and hands the delivery jobs it holds back.
import { expect } from 'chai';
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { closeTestDb, createTestDb, type TestDb } from '../helpers/db.js';
import { accepts, launch, type Proc } from '../helpers/processes.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { clearPrefix, testPrefix, TEST_REDIS_URL } from '../helpers/redis-prefix.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';
import { startSink } from '../helpers/smtp-sink.js';
import { giveDkimKey, seedEmail, enqueueEmail } from '../helpers/mail-seed.js';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { redisKeys } from '../../shared/redis-keys.js';

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
  // Handled here so that a request the test cuts off is no unhandled rejection; the test awaits it.
  response.catch(() => {});
  req.on('continue', () => continued());
  req.flushHeaders();
  await started;
  return { req, response };
}

describe('graceful shutdown', function () {
  this.timeout(150_000);
  let db: TestDb;
  let org: SeededOrg;
  const prefix = testPrefix();

  before(async () => {
    db = await createTestDb();
    org = await seedOrg(db.sql);
  });
  after(async () => {
    await closeTestDb(db);
    await clearPrefix(prefix);
  });

  async function startWeb(): Promise<{ proc: Proc; port: number }> {
    const port = await freePort();
    const proc = launch('api/http.ts', { DATABASE_URL: db.url, REDIS_PREFIX: prefix, PORT: String(port) });
    try {
      // Generous: under a full parallel test run, tsx compiling the web process can take a while.
      await waitFor(
        'the web process to listen',
        async () => {
          if (proc.child.exitCode !== null) throw new Error(`web exited early:\n${proc.output()}`);
          return await accepts(port);
        },
        90_000,
      );
    } catch (err) {
      await proc.kill();
      throw err;
    }
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
      await waitFor('the listener to close', async () => !(await accepts(port)));
      req.end(JSON.stringify({ name: 'late', permission: 'SEND' }));
      const res = await response;
      expect(res.status, res.body).to.equal(201);
      expect(JSON.parse(res.body).name).to.equal('late');
      expect(await proc.exited, `signal ${proc.child.signalCode}; output:\n${proc.output().slice(-4000)}`).to.equal(0);
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
      await waitFor('the listener to close', async () => !(await accepts(port)));
      proc.child.kill('SIGTERM');
      expect(await proc.exited, `signal ${proc.child.signalCode}; output:\n${proc.output().slice(-4000)}`).to.equal(1);
      expect(proc.output()).to.contain('SHUTDOWN_FORCED');
      req.destroy();
      await response.catch(() => {}); // cut off by the forced exit: no answer is expected
    } finally {
      await proc.kill();
    }
  });

  it('worker: SIGTERM stops it cleanly (exit 0)', async () => {
    const proc = launch('workers/main.ts', { DATABASE_URL: db.url, REDIS_PREFIX: prefix });
    try {
      await waitFor(
        'the worker to start',
        () => {
          if (proc.child.exitCode !== null) throw new Error(`worker exited early:\n${proc.output()}`);
          return proc.output().includes('worker started');
        },
        30_000,
      );
      proc.child.kill('SIGTERM');
      expect(await proc.exited, `signal ${proc.child.signalCode}; output:\n${proc.output().slice(-4000)}`).to.equal(0);
      expect(proc.output()).to.contain('"msg":"stopped"');
    } finally {
      await proc.kill();
    }
  });

  it('worker: SIGTERM mid-transaction finishes it, hands the jobs it holds back, another worker sends them once', async () => {
    const N = 6;
    const sink = await startSink(() => null, { disabledCommands: ['AUTH', 'STARTTLS'] });
    let release!: () => void;
    sink.stall = new Promise<void>((resolve) => (release = resolve));
    const mailOrg = await seedOrg(db.sql, { domains: [{ name: 'acme.test' }] });
    const domain = mailOrg.domains['acme.test']!;
    await db.sql`update domains set verified_at = now() - interval '60 days' where id = ${domain.id}`;
    await giveDkimKey(db.sql, domain.id);
    const bull = createRedis(TEST_REDIS_URL, 'bullmq', 'shutdown-test');
    const queues = createQueues(bull, redisKeys(prefix).bullPrefix);
    // One connection to the sink: one transaction at a time, the other jobs wait for it.
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      WORKER_QUEUES: 'delivery',
      SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}`,
      OUTBOUND_CONNECTIONS_PER_HOST: '1',
      DELIVERY_CONCURRENCY: String(N),
      SHUTDOWN_GRACE_SECONDS: '60',
    };
    const first = launch('workers/main.ts', env);
    let second: Proc | null = null;
    try {
      const ids: string[] = [];
      for (let i = 0; i < N; i++) {
        const { id } = await seedEmail(db.sql, {
          orgId: mailOrg.organization.id,
          domainId: domain.id,
          domainName: 'acme.test',
          to: [`r${i}@dest.test`],
        });
        ids.push(id);
        await enqueueEmail(queues, id);
      }
      await waitFor(
        'a message in DATA, its reply held',
        () => {
          if (!first.alive()) throw new Error(`worker exited early:\n${first.output()}`);
          return sink.dataEnded === 1;
        },
        90_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${first.output().slice(-3000)}`);
      });
      first.child.kill('SIGTERM');
      await waitFor('the worker to take the signal', () => first.output().includes('shutting down'));
      release();
      expect(await first.exited, first.output().slice(-4000)).to.equal(0);
      // The transaction in flight finished; nothing else went out after the signal.
      expect(sink.received.map((r) => r.rcptTo)).to.have.length(1);
      expect(first.output()).to.contain('handed back');

      second = launch('workers/main.ts', env);
      await waitFor(`all ${N} delivered`, () => sink.received.length >= N, 90_000);
      await waitFor(`all ${N} recorded as delivered`, async () => {
        const [row] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from email_recipients where email_id = any(${ids}) and status = 'delivered'`;
        return row!.n === N;
      });
      const rcpts = sink.received.flatMap((r) => r.rcptTo).sort();
      expect(rcpts).to.deep.equal(Array.from({ length: N }, (_, i) => `r${i}@dest.test`).sort());
      // A handed-back attempt was never started: one attempt each, none resumed as if its holder had died.
      const attempts = await db.sql<{ attempts: number }[]>`
        select attempts from email_recipients where email_id = any(${ids})`;
      expect(attempts.map((a) => a.attempts)).to.deep.equal(Array(N).fill(1));
      expect(second.output()).not.to.contain('DELIVERY_ATTEMPT_RESUMED');
    } finally {
      release();
      await first.kill();
      await second?.kill();
      await queues.close();
      await closeRedis(bull);
      await sink.close();
    }
  });
});
