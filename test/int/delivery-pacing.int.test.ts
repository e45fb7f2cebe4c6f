// Pacing of live delivery through real SMTP conversations: the per-provider token bucket
// (a Gmail-style 421 4.7.28 halves gmail's rate, later gmail recipients wait, outlook does not,
// the rate recovers) and the per-MX-host connection limit with connection reuse.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import type { SMTPServerSession } from 'smtp-server';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import { ProviderThrottle, type ThrottleOptions } from '../../workers/delivery/throttle.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startMetricsWorker } from '../../workers/metrics.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const GMAIL_421 =
  '4.7.28 [127.0.0.1] Our system has detected an unusual rate of unsolicited mail originating from your IP ' +
  'address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited. gsmtp';

// Slow numbers, so that what the test looks at holds for seconds, not for a fraction of one, on a
// loaded machine: after the 421 the rate is 0.1 msg/s with no token left, so the next gmail
// message finds its wait (about 10 s) longer than it may wait in line and is deferred; the rate
// stays below its maximum for 10 s, and gmail's two recipients go out within about 15 s.
const THROTTLE: ThrottleOptions = { maxRate: 0.2, minRate: 0.05, burst: 1, recover: 0.01, maxWaitSeconds: 0.2 };
const PER_HOST = 3;

describe('delivery pacing (provider throttle, connections per MX host)', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  let metrics: Worker;
  let domainId: string;
  const conns = { open: 0, max: 0, total: 0 };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    domainId = org.domains['acme.test']!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    await giveDkimKey(api.deps.sql, domainId);
    sink = await startSink(
      (rcpt, n) => (rcpt.startsWith('ratelimited@') && n === 1 ? { code: 421, message: GMAIL_421 } : null),
      {
        onConnect(_session: SMTPServerSession, cb: (err?: Error | null) => void) {
          conns.open++;
          conns.total++;
          conns.max = Math.max(conns.max, conns.open);
          cb();
        },
        onClose() {
          conns.open--;
        },
      },
    );
    dns = await startDns();
    for (const d of ['gmail.com', 'outlook.com', 'bulk.test', 'team.test']) {
      dns.mx(d, [{ exchange: '127.0.0.1', priority: 10 }]);
    }
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_RETRY_SECONDS: '0.5',
      OUTBOUND_CONNECTIONS_PER_HOST: String(PER_HOST),
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0, throttle: THROTTLE });
    metrics = startMetricsWorker(deps);
  });

  /** The connection tests run with the default pacing (500 msg/s per provider). */
  const withDefaultPacing = async () => {
    await worker.close();
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  };

  after(async () => {
    await worker.close();
    await metrics.close();
    await deps.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  const send = async (to: string[]) => {
    const e = await seedEmail(api.deps.sql, { orgId: org.organization.id, domainId, domainName: 'acme.test', to });
    await enqueueEmail(api.deps.queues, e.id);
    return e;
  };
  const recipient = async (id: string) =>
    (
      await api.deps.sql<{ status: string; wait_reason: string | null; last_response: string | null }[]>`
        select status, wait_reason, last_response from email_recipients where id = ${id}`
    )[0]!;

  it('halves gmail’s rate on a 421 4.7.28 (blocked), defers gmail while outlook goes out, and recovers', async function () {
    this.timeout(120_000);
    const throttle = new ProviderThrottle(deps.redis, deps.redisKeys, THROTTLE);
    expect(await throttle.rate('gmail')).to.equal(THROTTLE.maxRate);

    const first = await send(['ratelimited@gmail.com']);
    const firstRid = first.recipients['ratelimited@gmail.com']!;
    const delayed = await waitFor('email.delivery_delayed of the rate-limited recipient', async () => {
      const [row] = await api.deps.sql<{ blocked: boolean; detail: string; provider: string }[]>`
        select blocked, detail, provider from events where email_id = ${first.id} and type = 'email.delivery_delayed'`;
      return row;
    });
    expect(delayed).to.deep.equal({ blocked: true, detail: 'IPFailure', provider: 'gmail' });
    // Halved from the maximum (2 → 1), regaining 0.1 msg/s per second since.
    const slowed = await throttle.rate('gmail');
    expect(slowed)
      .to.be.at.least(THROTTLE.maxRate / 2)
      .and.below(THROTTLE.maxRate);

    const next = await send(['waits@gmail.com', 'goes@outlook.com']);
    const waitsRid = next.recipients['waits@gmail.com']!;
    const goesRid = next.recipients['goes@outlook.com']!;
    await waitFor('outlook recipient delivered', async () => (await recipient(goesRid)).status === 'delivered');
    const waiting = await waitFor('gmail recipient waiting for the provider', async () => {
      const r = await recipient(waitsRid);
      return r.wait_reason?.includes('provider gmail throttled') ? r : null;
    });
    expect(waiting.status).to.equal('delivery_delayed');
    expect(waiting.wait_reason).to.match(/^retry at \S+ after: provider gmail throttled/);
    const waitEvent = await api.deps.sql<{ blocked: boolean }[]>`
      select blocked from events where recipient_id = ${waitsRid} and type = 'email.delivery_delayed'`;
    expect(waitEvent[0]!.blocked).to.equal(false); // our own pacing is not a block by the provider

    // Both gmail recipients get through once tokens come back, each exactly once.
    const delivered = async (rid: string) => (await recipient(rid)).status === 'delivered';
    await waitFor('throttled recipient delivered', () => delivered(waitsRid), 60_000);
    await waitFor('rate-limited recipient delivered', () => delivered(firstRid), 60_000);
    expect(sink.received.filter((m) => m.rcptTo.includes('waits@gmail.com'))).to.have.length(1);
    expect(sink.received.filter((m) => m.rcptTo.includes('ratelimited@gmail.com'))).to.have.length(1);

    await waitFor('gmail rate recovered', async () => (await throttle.rate('gmail')) >= THROTTLE.maxRate, 30_000);
    expect(await throttle.rate('outlook')).to.equal(THROTTLE.maxRate);

    // Metrics count the provider's block (the 421), not Tern's own pacing.
    const key = await org.mint({ permission: 'FULL' });
    const m = await waitFor('gmail metrics', async () => {
      const res = await api.request('GET', '/metrics?days=1&facet=provider', { token: key.token });
      const gmail = (res.json?.by as { key: string; blocked: number; delayed: number }[] | undefined)?.find(
        (b) => b.key === 'gmail',
      );
      return gmail && gmail.delayed >= 2 ? gmail : null;
    });
    expect(m.blocked).to.equal(1);
  });

  it('opens at most OUTBOUND_CONNECTIONS_PER_HOST connections to one MX host for 50 messages', async () => {
    await withDefaultPacing();
    conns.max = 0;
    conns.total = 0;
    let release!: () => void;
    let stalled = 0;
    const before = sink.dataEnded;
    sink.stall = new Promise<void>((resolve) => (release = resolve));
    const emails = [];
    for (let i = 0; i < 50; i++) emails.push(await send([`user${i}@bulk.test`]));
    // DATA answers wait until the limit's worth of transfers are held, so that every delivery job
    // (50 run at once) wants a connection while the first ones are busy.
    await waitFor('the first transfers', async () => (stalled = sink.dataEnded - before) >= PER_HOST);
    release();
    sink.stall = null;
    await waitFor('all 50 delivered', async () => {
      const [row] = await api.deps.sql<{ n: number }[]>`
        select count(*)::int as n from email_recipients where domain = 'bulk.test' and status = 'delivered'`;
      return row!.n === 50;
    });
    expect(stalled).to.be.at.least(PER_HOST);
    expect(conns.max).to.be.at.most(PER_HOST);
    expect(conns.max).to.equal(PER_HOST);
    // Connections are kept and reused between messages: far fewer connections than messages.
    expect(conns.total).to.be.below(50);
    expect(sink.received.filter((r) => r.rcptTo[0]!.endsWith('@bulk.test'))).to.have.length(50);
  });

  it('sends several recipients of one domain over one connection, one transaction each', async () => {
    const to = Array.from({ length: 8 }, (_, i) => `member${i}@team.test`);
    const e = await send(to);
    await waitFor('team delivered', async () => {
      for (const a of to) if ((await recipient(e.recipients[a]!)).status !== 'delivered') return false;
      return true;
    });
    const got = sink.received.filter((r) => r.rcptTo[0]!.endsWith('@team.test'));
    expect(got).to.have.length(8);
    for (const r of got) expect(r.rcptTo).to.have.length(1); // its own VERP MAIL FROM, its own RCPT
    expect(new Set(got.map((r) => r.session)).size).to.equal(1);
  });
});
