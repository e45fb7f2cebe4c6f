// A receiving server that closes idle connections (smtp-server's `socketTimeout`, Postfix's
// `smtpd_timeout`, Gmail after a few minutes), through the real delivery worker: after the
// server has closed every connection of the pool, the next messages are delivered like the first
// ones (the closed connections' slots came back to the pool). And the race of that close with a
// reuse: a message whose reused connection the server closes at its MAIL FROM goes out on
// another connection at once, not at its next attempt.
import { expect } from 'chai';
import { newId } from '../../shared/ids.js';
import { Outbound, type AttemptResult, type OutboundMessage } from '../../shared/mail/outbound/index.js';
import { startDeliveryWorker } from '../../workers/delivery.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

/** OUTBOUND_CONNECTIONS_PER_HOST's default: the first batch fills every slot. */
const PER_HOST = 5;

describe('delivery worker: a receiving server that closes idle connections every 2 s', () => {
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await api.deps
      .sql`update domains set verified_at = now() - interval '60 days' where id = ${org.domains['acme.test']!.id}`;
    await giveDkimKey(api.deps.sql, org.domains['acme.test']!.id);
    sink = await startSink(() => null, { disabledCommands: ['AUTH', 'STARTTLS'], socketTimeout: 2000 });
  });
  after(async () => {
    await sink.close();
    await api.close();
  });

  /** Stores and enqueues `n` messages; resolves when all of them are delivered. */
  async function sendBatch(name: string, n: number): Promise<void> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = await seedEmail(api.deps.sql, {
        orgId: org.organization.id,
        domainId: org.domains['acme.test']!.id,
        domainName: 'acme.test',
        to: [`${name}-${i}@dest.test`],
      });
      await enqueueEmail(api.deps.queues, e.id);
      ids.push(e.id);
    }
    await waitFor(
      `the ${name} batch delivered`,
      async () => {
        const [row] = await api.deps.sql<{ n: number }[]>`
          select count(*)::int as n from events where email_id = any(${ids}) and type = 'email.delivered'`;
        return row!.n === n;
      },
      30_000,
    );
  }

  it('delivers 12 messages, then, after the server closed every idle connection, 12 more', async () => {
    const deps = workerDepsFor(api, {
      SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}`,
      OUTBOUND_CONNECTIONS_PER_HOST: String(PER_HOST),
      DELIVERY_RETRY_SECONDS: '1',
    });
    // A message that finds no free slot is deferred after 5 s and tried again a second later.
    const worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0, acquireTimeoutMs: 5000 });
    try {
      // DATA is held until the worker has every connection open, so that all of them go idle.
      let go!: () => void;
      sink.stall = new Promise<void>((resolve) => (go = resolve));
      const first = sendBatch('first', 12);
      await waitFor(`${PER_HOST} connections at the server`, () => sink.connections.size === PER_HOST);
      go();
      sink.stall = null;
      await first;
      await waitFor('the server to close its idle connections', () => sink.connections.size === 0);
      await sendBatch('second', 12);
      const rcpts = sink.received.flatMap((m) => m.rcptTo);
      for (const name of ['first', 'second']) {
        for (let i = 0; i < 12; i++) expect(rcpts).to.include(`${name}-${i}@dest.test`);
      }
    } finally {
      await worker.close();
      await deps.close();
    }
  });
});

describe('outbound: the server closes a connection just as it is reused', () => {
  let sink: Sink;
  /** When set, the next MAIL FROM is answered by the idle timeout's 421 and the close instead. */
  let closeAtNextMail = false;

  before(async () => {
    sink = await startSink(() => null, {
      disabledCommands: ['AUTH', 'STARTTLS'],
      onMailFrom(_address, session, cb) {
        if (!closeAtNextMail) return cb();
        closeAtNextMail = false;
        sink.closeConnections('timeout', (port) => port === session.remotePort);
      },
    });
  });
  after(() => sink.close());

  const message = (to: string): OutboundMessage => ({
    id: newId('rcp'),
    from: 'b@bounces.acme.test',
    to,
    raw: Buffer.from(`Message-ID: <${newId('em')}@acme.test>\r\nSubject: x\r\n\r\nhi\r\n`),
  });

  it('sends the message on a new connection instead of deferring it', async () => {
    const outbound = new Outbound({
      smtpSmarthost: `smtp://127.0.0.1:${sink.port}`,
      dnsServers: [],
      outboundPort: 25,
      heloName: 'mta.tern.test',
      outboundConnectionsPerHost: 1,
    });
    try {
      const route = await outbound.route('dest.test');
      const results: AttemptResult[] = [];
      const hooks = { after: async (_m: OutboundMessage, r: AttemptResult) => void results.push(r) };
      await outbound.deliver(route, [message('first@dest.test')], hooks);
      const firstSession = sink.received[0]!.session;
      closeAtNextMail = true; // the idle connection the next message reuses is closed at its MAIL FROM
      await outbound.deliver(route, [message('second@dest.test')], hooks);
      expect(results.map((r) => r.kind)).to.deep.equal(['delivered', 'delivered']);
      const second = sink.received.find((m) => m.rcptTo.includes('second@dest.test'))!;
      expect(second.session, 'a new connection').to.not.equal(firstSession);
    } finally {
      outbound.close();
    }
  });
});
