// Delivery order through real SMTP (docs/delivery.md "Streams, priority and fairness"): an
// organization's transactional message is delivered ahead of another's broadcast backlog,
// transactional mail has slots of its own while broadcast mail fills the broadcast worker's, two
// organizations in one stream interleave, and broadcast deliveries never start past
// BROADCAST_MAX_SHARE of the slots while transactional mail is being delivered.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { track } from '../helpers/resources.js';
import { seedOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

const CONCURRENCY = 4;
const SHARE = 0.5;

/** A receiving server that notes the order of arrivals and which deliveries overlap. */
interface OrderSink {
  port: number;
  /** Recipients in the order their DATA began. */
  started: string[];
  /** Recipients in the order their DATA was answered. */
  done: string[];
  /** Deliveries between DATA and its answer, by recipient. */
  inFlight: Set<string>;
  /** Called as each DATA begins, with the recipient. */
  onStart: (rcpt: string) => void;
  /** While set, answers wait for it. */
  hold: Promise<void> | null;
  /** While set, answers to recipients starting with `txn` wait for it (after `hold`). */
  holdTxn: Promise<void> | null;
  close(): Promise<void>;
}

async function startOrderSink(): Promise<OrderSink> {
  const sink: OrderSink = {
    port: 0,
    started: [],
    done: [],
    inFlight: new Set(),
    onStart: () => {},
    hold: null,
    holdTxn: null,
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onData(stream, session, cb) {
      const rcpt = session.envelope.rcptTo[0]!.address.toLowerCase();
      sink.started.push(rcpt);
      sink.inFlight.add(rcpt);
      sink.onStart(rcpt);
      stream.resume();
      stream.on('end', () => {
        const answer = () => {
          sink.inFlight.delete(rcpt);
          sink.done.push(rcpt);
          cb(null, 'Ok: queued');
        };
        const txnHold = () => (rcpt.startsWith('txn') && sink.holdTxn ? sink.holdTxn.then(answer) : answer());
        if (sink.hold) void sink.hold.then(txnHold);
        else void txnHold();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.server.address() as AddressInfo).port;
  sink.close = track(`order sink ${sink.port}`, () => new Promise<void>((resolve) => server.close(() => resolve())));
  return sink;
}

describe('delivery: streams, priority and fairness', function () {
  this.timeout(120_000);
  let api: TestApi;
  let sink: OrderSink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers | null = null;
  /** Lets held deliveries answer (a failed test must not leave the worker's jobs hanging). */
  let release: () => void = () => {};
  let releaseTxn: () => void = () => {};

  before(async () => {
    api = await startApi();
    sink = await startOrderSink();
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_CONCURRENCY: String(CONCURRENCY),
      // Enough connections for both streams' slots: the test is about slots, not connections.
      OUTBOUND_CONNECTIONS_PER_HOST: String(2 * CONCURRENCY),
      BROADCAST_MAX_SHARE: String(SHARE),
    });
  });

  afterEach(async () => {
    sink.hold = null;
    sink.holdTxn = null;
    release();
    releaseTxn();
    await worker?.close();
    worker = null;
    sink.onStart = () => {};
    sink.hold = null;
  });

  after(async () => {
    await deps.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  const startWorker = async () => {
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  };

  let orgs = 0;
  /** A fresh org with a long-verified, DKIM-keyed domain and its admin key. */
  async function newOrg() {
    const name = `org${++orgs}.test`;
    const org = await seedOrg(api.deps.sql, { domains: [{ name }] });
    const domainId = org.domains[name]!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    await giveDkimKey(api.deps.sql, domainId);
    await unthrottle(api, org.organization.id);
    return { token: org.key.token, from: `Org <hello@${name}>` };
  }

  /** Sends one message per recipient in batches of 100; returns the recipients. */
  async function send(o: { token: string; from: string }, prefix: string, n: number, stream?: string) {
    const rcpts = Array.from({ length: n }, (_, i) => `${prefix}${i}@dest.test`);
    for (let i = 0; i < n; i += 100) {
      const body = rcpts.slice(i, i + 100).map((to) => ({
        from: o.from,
        to,
        subject: 'Hi',
        text: 'Hello',
        ...(stream ? { stream } : {}),
      }));
      const res = await api.request('POST', '/emails/batch', { token: o.token, body });
      expect(res.status, res.text).to.equal(200);
    }
    return rcpts;
  }

  const doneWith = (prefix: string) => sink.done.filter((r) => r.startsWith(prefix)).length;
  // A backlog drains slowly on a machine busy with a parallel run: a generous deadline.
  const allDone = (prefix: string, n: number) =>
    waitFor(`${prefix} delivered`, async () => doneWith(prefix) >= n, { timeoutMs: 50_000 });

  it('delivers another org’s transactional message ahead of a broadcast backlog', async () => {
    const a = await newOrg();
    const b = await newOrg();
    await send(a, 'bulk-a', 300, 'broadcast');
    await startWorker();
    // The backlog is draining: then B sends one message.
    await waitFor('the backlog started', async () => doneWith('bulk-a') >= 10);
    const before = doneWith('bulk-a');
    await send(b, 'reset-b', 1);
    await allDone('reset-b', 1);
    const atArrival = doneWith('bulk-a');
    // Only the deliveries already under way (a few slots) went ahead of it, not the backlog.
    expect(atArrival - before, 'broadcast deliveries between the send and its arrival').to.be.at.most(3 * CONCURRENCY);
    expect(atArrival).to.be.below(300);
    await allDone('bulk-a', 300);
  });

  it('gives transactional mail slots of its own, and holds broadcast mail to its share meanwhile', async () => {
    const a = await newOrg();
    const b = await newOrg();
    const cap = Math.floor(SHARE * CONCURRENCY);
    // Broadcast mail fills every broadcast slot while nothing else is sent: four deliveries held at DATA.
    sink.hold = new Promise((resolve) => (release = resolve));
    await send(a, 'news-a', 12, 'broadcast');
    await startWorker();
    await waitFor('every broadcast slot busy', async () => sink.inFlight.size === CONCURRENCY);
    expect(worker!.broadcast.concurrency).to.equal(CONCURRENCY);
    // Transactional mail starts at once, beside the held broadcast deliveries.
    const txn = await send(b, 'txn-b', 8);
    await waitFor('transactional deliveries under way', async () =>
      [...sink.inFlight].some((r) => r.startsWith('txn-b')),
    );
    expect([...sink.inFlight].filter((r) => r.startsWith('news-a'))).to.have.length(CONCURRENCY);
    // Meanwhile the broadcast worker takes no job past its share: the held broadcast deliveries
    // are answered while the transactional ones stay held, and each broadcast delivery that starts
    // then counts those under way.
    expect(worker!.broadcast.concurrency).to.equal(cap);
    const overlaps: number[] = [];
    sink.onStart = (rcpt) => {
      if (rcpt.startsWith('news-a') && txn.some((t) => !sink.done.includes(t)))
        overlaps.push([...sink.inFlight].filter((r) => r.startsWith('news-a')).length);
    };
    sink.holdTxn = new Promise((resolve) => (releaseTxn = resolve));
    sink.hold = null;
    release();
    await waitFor('broadcast deliveries past the held ones', async () => doneWith('news-a') >= CONCURRENCY + 2);
    sink.holdTxn = null;
    releaseTxn();
    await allDone('txn-b', 8);
    await allDone('news-a', 12);
    expect(overlaps.length, 'broadcast deliveries started during transactional ones').to.be.at.least(2);
    expect(
      overlaps.every((n) => n <= cap),
      `broadcast deliveries under way: ${overlaps.join(',')}`,
    ).to.equal(true);
    // Once transactional mail has been quiet a while, broadcast mail may use every slot again.
    await waitFor('the broadcast worker back to every slot', async () => worker!.broadcast.concurrency === CONCURRENCY);
  });

  it('lets two organizations in the same stream interleave', async () => {
    const a = await newOrg();
    const c = await newOrg();
    await send(a, 'big-a', 200, 'broadcast');
    await send(c, 'small-c', 40, 'broadcast');
    await startWorker();
    await allDone('small-c', 40);
    // First in, first out would deliver all of A's 200 first; fair shares alternate.
    const aSoFar = doneWith('big-a');
    expect(aSoFar, 'A’s deliveries before C’s last one').to.be.below(40 + 4 * CONCURRENCY);
    await allDone('big-a', 200);
  });
  it('runs the broadcast stream on a thread of its own in the worker process, and stops cleanly', async () => {
    const a = await newOrg();
    const b = await newOrg();
    await send(a, 'thread-a', 20, 'broadcast');
    await send(b, 'thread-b', 3);
    const child = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: api.db.url,
        REDIS_URL: api.config.redisUrl,
        REDIS_PREFIX: api.config.redisPrefix,
        SECRET_KEY: api.config.secretKey,
        OUTBOUND_PORT: String(sink.port),
        DNS_SERVERS: dns.server,
        WORKER_QUEUES: 'delivery,delivery-broadcast,broadcast',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const stop = track('worker process', async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    try {
      await allDone('thread-b', 3);
      await allDone('thread-a', 20);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; thread?: string; queues?: string[] });
      expect(lines.find((l) => l.msg === 'broadcast stream on a thread of its own')?.queues).to.deep.equal([
        'delivery-broadcast',
        'broadcast',
      ]);
      child.kill('SIGTERM');
      expect(await exited, out).to.equal(0);
    } finally {
      await stop();
    }
  });
});
