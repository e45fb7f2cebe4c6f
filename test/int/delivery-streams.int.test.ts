// Delivery order through real SMTP (docs/delivery.md "Streams, priority and fairness"): an
// organization's transactional message is delivered ahead of another's broadcast backlog, two
// organizations in one stream interleave, and broadcast deliveries never start past
// BROADCAST_MAX_SHARE of the worker's slots while transactional mail waits.
import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { SMTPServer } from 'smtp-server';
import { startDeliveryWorker } from '../../workers/delivery.js';
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
        if (sink.hold) void sink.hold.then(answer);
        else answer();
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
  let worker: Worker | null = null;
  /** Lets held deliveries answer (a failed test must not leave the worker's jobs hanging). */
  let release: () => void = () => {};

  before(async () => {
    api = await startApi();
    sink = await startOrderSink();
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_CONCURRENCY: String(CONCURRENCY),
      OUTBOUND_CONNECTIONS_PER_HOST: String(CONCURRENCY),
      BROADCAST_MAX_SHARE: String(SHARE),
    });
  });

  afterEach(async () => {
    sink.hold = null;
    release();
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

  it('takes waiting transactional mail first, and never more than the share for broadcast while it waits', async () => {
    const a = await newOrg();
    const b = await newOrg();
    const cap = Math.floor(SHARE * CONCURRENCY);
    // Broadcast mail fills every slot while nothing else waits: four deliveries held at DATA.
    sink.hold = new Promise((resolve) => (release = resolve));
    await send(a, 'news-a', 12, 'broadcast');
    await startWorker();
    await waitFor('every slot busy with broadcast mail', async () => sink.inFlight.size === CONCURRENCY);
    expect([...sink.inFlight].every((r) => r.startsWith('news-a'))).to.equal(true);
    // Transactional mail now waits; each broadcast delivery that starts before the last of it
    // starts counts the broadcast deliveries under way.
    const pending = new Set(await send(b, 'txn-b', 8));
    const overlaps: number[] = [];
    sink.onStart = (rcpt) => {
      if (rcpt.startsWith('txn-b')) pending.delete(rcpt);
      else if (pending.size > 0) overlaps.push([...sink.inFlight].filter((r) => r.startsWith('news-a')).length);
    };
    sink.hold = null;
    release();
    await allDone('txn-b', 8);
    await allDone('news-a', 12);
    expect(
      overlaps.every((n) => n <= cap),
      `broadcast deliveries under way: ${overlaps.join(',')}`,
    ).to.equal(true);
    // Priority: the slots the held deliveries freed went to transactional mail (only the held
    // broadcast deliveries started before the first transactional one).
    const ours = sink.started.filter((r) => r.startsWith('txn-b') || r.startsWith('news-a'));
    const firstTxn = ours.findIndex((r) => r.startsWith('txn-b'));
    expect(firstTxn).to.equal(CONCURRENCY);
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
});
