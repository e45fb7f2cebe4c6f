import { expect } from 'chai';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { parseVerpAddress, verpAddress } from '../../shared/mail/verp.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { enqueueEmail, giveDkimKey, seedEmail, type DkimPair } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startDns, startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('delivery worker (direct to MX)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;
  let dns: Awaited<ReturnType<typeof startDns>>;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  let dkim: DkimPair;
  const domain = () => org.domains['acme.test']!;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domain().id}`;
    dkim = await giveDkimKey(api.deps.sql, domain().id);
    sink = await startSink((rcpt, n) => {
      if (rcpt.startsWith('later') && n === 1) return { code: 451, message: '4.2.1 mailbox busy, try later' };
      if (rcpt.startsWith('nobody')) return { code: 550, message: '5.1.1 <' + rcpt + '>: user unknown' };
      return null;
    });
    dns = await startDns({
      mx: {
        'dest.test': [
          { exchange: 'mx-down.dest.test', priority: 10 },
          { exchange: 'mx-up.dest.test', priority: 20 },
        ],
        'null.test': [{ exchange: '', priority: 0 }],
      },
      // 127.0.0.2 has nothing listening: the first MX refuses connections.
      a: { 'mx-down.dest.test': ['127.0.0.2'], 'mx-up.dest.test': ['127.0.0.1'] },
    });
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_RETRY_SECONDS: '0.3',
      DELIVERY_PAUSE_RECHECK_SECONDS: '0.3',
      HELO_NAME: 'mta.tern.test',
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });

  after(async () => {
    await worker.close();
    await deps.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  const events = (emailId: string) =>
    api.deps.sql<
      { type: string; recipient: string; bounce_type: string | null; detail: string | null; provider: string }[]
    >`
      select type, recipient, bounce_type, detail, provider from events where email_id = ${emailId} order by id`;
  const recipient = async (id: string) =>
    (
      await api.deps.sql<{ status: string; wait_reason: string | null; attempts: number }[]>`
      select status, wait_reason, attempts from email_recipients where id = ${id}`
    )[0]!;

  it('delivers a DKIM-signed message with its Message-ID and a VERP return path, over the second MX', async () => {
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['alice@dest.test'],
      bcc: ['hidden@dest.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    await waitFor('delivery', async () => (await recipient(e.recipients['hidden@dest.test']!)).status === 'delivered');
    await waitFor('delivery', async () => (await recipient(e.recipients['alice@dest.test']!)).status === 'delivered');
    const msg = sink.received.find((m) => m.rcptTo.includes('alice@dest.test'))!;
    const rid = e.recipients['alice@dest.test']!;
    expect(msg.mailFrom).to.equal(verpAddress(rid, 'acme.test', deps.config.secretKey));
    expect(parseVerpAddress(msg.mailFrom, deps.config.secretKey)).to.equal(rid);
    const text = msg.raw.toString();
    expect(text).to.match(new RegExp(`^Message-ID: <${e.id}@acme\\.test>`, 'mi'));
    expect(text).not.to.match(/^bcc:/im);
    expect(text).not.to.contain('hidden@dest.test');
    const result = await dkimVerify(msg.raw, {
      resolver: async (name: string, rr: string) => {
        if (rr === 'TXT' && name === 'tern._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${dkim.publicB64}`]];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    expect(result.results[0]!.status.result).to.equal('pass');
    expect(result.results[0]!.signingDomain).to.equal('acme.test');
    const types = (await events(e.id)).filter((x) => x.recipient === 'alice@dest.test').map((x) => x.type);
    expect(types).to.deep.equal(['email.sent', 'email.delivered']);
    await waitFor('email status sent', async () => {
      const [row] = await api.deps.sql<{ status: string }[]>`select status from emails where id = ${e.id}`;
      return row!.status === 'sent';
    });
  });

  it('defers on 4xx and delivers on the retry', async () => {
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['later@dest.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    const rid = e.recipients['later@dest.test']!;
    await waitFor('retry delivery', async () => (await recipient(rid)).status === 'delivered');
    const ev = await events(e.id);
    expect(ev.map((x) => x.type)).to.deep.equal(['email.sent', 'email.delivery_delayed', 'email.delivered']);
    expect(ev[1]!.detail).to.be.a('string').and.not.equal('');
    expect((await recipient(rid)).attempts).to.equal(2);
    expect(sink.received.filter((m) => m.rcptTo.includes('later@dest.test'))).to.have.length(1);
    // Each outcome records its attempt: number, reply, the host that answered, TLS (the console's timeline).
    const data = await api.deps.sql<{ type: string; data: Record<string, unknown> }[]>`
      select type, data from events where email_id = ${e.id} and type <> 'email.sent' order by id`;
    expect(data.map((d) => [d.type, d.data.attempt, d.data.mx_host])).to.deep.equal([
      ['email.delivery_delayed', 1, 'mx-up.dest.test'],
      ['email.delivered', 2, 'mx-up.dest.test'],
    ]);
    // The sink offers STARTTLS (smtp-server's own certificate): taken, without a policy.
    for (const d of data) {
      expect(d.data.tls).to.include({ policy: 'none', mode: 'opportunistic' });
      expect((d.data.tls as { version: string }).version).to.match(/^TLSv1\.[23]$/);
      expect((d.data.tls as { cipher: string }).cipher)
        .to.be.a('string')
        .and.not.equal('');
    }
    expect(data[0]!.data.response).to.match(/^4\d\d /);
    expect(data[1]!.data.response).to.match(/^250 /);
  });

  it('bounces a 5.1.1 hard, suppresses the address, and rejects the next live send to it', async () => {
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['nobody@dest.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    await waitFor('bounce', async () => (await recipient(e.recipients['nobody@dest.test']!)).status === 'bounced');
    const bounced = (await events(e.id)).find((x) => x.type === 'email.bounced')!;
    expect(bounced).to.include({ bounce_type: 'hard', detail: 'NoEmail', provider: 'other' });
    const [sup] = await api.deps.sql`select reason, source_email_id from suppressions where email = 'nobody@dest.test'`;
    expect(sup).to.deep.include({ reason: 'hard_bounce', source_email_id: e.id });

    const again = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['nobody@dest.test'],
    });
    const before = sink.attempts.get('nobody@dest.test');
    await enqueueEmail(api.deps.queues, again.id);
    await waitFor('reject', async () => (await recipient(again.recipients['nobody@dest.test']!)).status === 'rejected');
    const rejected = (await events(again.id)).map((x) => [x.type, x.detail]);
    expect(rejected).to.deep.equal([['email.rejected', 'Suppressed']]);
    expect(sink.attempts.get('nobody@dest.test')).to.equal(before);
  });

  it('hard-bounces a domain with a null MX without connecting anywhere', async () => {
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['x@null.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    await waitFor('null MX bounce', async () => (await recipient(e.recipients['x@null.test']!)).status === 'bounced');
    expect((await events(e.id)).find((x) => x.type === 'email.bounced')!.bounce_type).to.equal('hard');
  });

  it('fails a message whose domain has no DKIM key', async () => {
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'nokey.test' }] });
    const e = await seedEmail(api.deps.sql, {
      orgId: other.organization.id,
      domainId: other.domains['nokey.test']!.id,
      domainName: 'nokey.test',
      to: ['bob@dest.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    await waitFor('failure', async () => (await recipient(e.recipients['bob@dest.test']!)).status === 'failed');
    const failed = (await events(e.id)).find((x) => x.type === 'email.failed')!;
    expect(failed.detail).to.equal('no DKIM key');
  });

  it('holds a paused org’s message (never dropped) and sends it once unpaused', async () => {
    await api.deps.sql`update organizations set sending_paused = true where id = ${org.organization.id}`;
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      to: ['paused@dest.test'],
    });
    const rid = e.recipients['paused@dest.test']!;
    await enqueueEmail(api.deps.queues, e.id);
    await waitFor('hold', async () => (await recipient(rid)).wait_reason === 'sending paused');
    expect((await recipient(rid)).status).to.equal('queued');
    const [em] = await api.deps.sql<{ status: string }[]>`select status from emails where id = ${e.id}`;
    expect(em!.status).to.equal('queued');
    await api.deps.sql`update organizations set sending_paused = false where id = ${org.organization.id}`;
    await waitFor('release', async () => (await recipient(rid)).status === 'delivered');
  });

  it('makes recipients over the daily cap wait for the next UTC day', async () => {
    await api.deps.sql`update organizations set daily_cap = 1 where id = ${org.organization.id}`;
    try {
      const e = await seedEmail(api.deps.sql, {
        orgId: org.organization.id,
        domainId: domain().id,
        domainName: 'acme.test',
        to: ['cap1@dest.test', 'cap2@dest.test'],
      });
      await enqueueEmail(api.deps.queues, e.id);
      const waiting = await waitFor('cap', async () => {
        const rows = await api.deps.sql<{ email: string; status: string; wait_reason: string | null }[]>`
          select email, status, wait_reason from email_recipients where email_id = ${e.id} order by id`;
        return rows.some((r) => r.status === 'delivered') && rows.find((r) => r.wait_reason) ? rows : null;
      });
      const held = waiting.find((r) => r.status !== 'delivered')!;
      expect(held.status).to.equal('queued');
      const midnight = new Date(Math.floor(Date.now() / 86_400_000 + 1) * 86_400_000).toISOString();
      expect(held.wait_reason).to.equal(`over daily cap until ${midnight}`);
    } finally {
      await api.deps.sql`update organizations set daily_cap = null where id = ${org.organization.id}`;
    }
  });

  it('simulates every test-mode outcome without a connection', async () => {
    const locals = ['bounced', 'softbounced', 'complained', 'delayed', 'rejected', 'plain'];
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: domain().id,
      domainName: 'acme.test',
      mode: 'test',
      to: locals.map((l) => `${l}@dest.test`),
    });
    const seen = sink.received.length;
    await enqueueEmail(api.deps.queues, e.id);
    const final = { bounced: 'bounced', softbounced: 'bounced', complained: 'delivered', delayed: 'delivered' };
    await waitFor('test-mode outcomes', async () => {
      for (const l of locals) {
        const want = (final as Record<string, string>)[l] ?? (l === 'rejected' ? 'rejected' : 'delivered');
        if ((await recipient(e.recipients[`${l}@dest.test`]!)).status !== want) return false;
      }
      return true;
    });
    const ev = await events(e.id);
    const of = (l: string) => ev.filter((x) => x.recipient === `${l}@dest.test`).map((x) => x.type);
    expect(of('bounced')).to.deep.equal(['email.sent', 'email.bounced']);
    expect(ev.find((x) => x.recipient === 'bounced@dest.test' && x.type === 'email.bounced')!.bounce_type).to.equal(
      'hard',
    );
    expect(of('softbounced')).to.deep.equal(['email.sent', 'email.delivery_delayed', 'email.bounced']);
    expect(ev.find((x) => x.recipient === 'softbounced@dest.test' && x.type === 'email.bounced')!.bounce_type).to.equal(
      'soft',
    );
    expect(of('complained')).to.deep.equal(['email.sent', 'email.delivered', 'email.complained']);
    expect(of('delayed')).to.deep.equal(['email.sent', 'email.delivery_delayed', 'email.delivered']);
    expect(of('rejected')).to.deep.equal(['email.sent', 'email.rejected']);
    expect(of('plain')).to.deep.equal(['email.sent', 'email.delivered']);
    expect(sink.received.length).to.equal(seen);
    const [sup] = await api.deps
      .sql`select count(*)::int as n from suppressions where email like '%@dest.test' and source_email_id = ${e.id}`;
    expect(sup!.n).to.equal(0);
  });
});
