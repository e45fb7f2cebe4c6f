// Issue 7 end to end: a nodemailer client authenticated with a key id and token sends through the
// SMTP relay (STARTTLS); the delivery worker delivers it direct to a local MX (found through a
// local DNS server) DKIM-signed with a VERP return path; a reply to it arriving at Tern's MX fires
// email.received threaded to it (by the client's own Message-ID); a DSN and an ARF report for it
// fire email.bounced and email.complained. Relay refusal codes: test/int/relay-*.int.test.ts.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { createMxServer } from '../../api/smtp/mx-server.js';
import { createLogger } from '../../shared/logger.js';
import { parseVerpAddress } from '../../shared/mail/verp.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { giveDkimKey, type DkimPair } from '../helpers/mail-seed.js';
import { startRelay, type TestRelay } from '../helpers/relay.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { RawSmtp } from '../helpers/smtp-raw.js';
import { startSink, type Received, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = new URL('../fixtures/inbound/', import.meta.url);
const CLIENT_MESSAGE_ID = 'client-thread-7@acme.test';

function fixture(name: string, vars: Record<string, string>): string {
  let text = readFileSync(new URL(name, FIXTURES), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.split(`{{${k}}}`).join(v);
  return text;
}

describe('end to end: relay → delivery → MX replies, DSN and ARF', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let sink: Sink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let delivery: DeliveryWorkers;
  let mxPort: number;
  let dkim: DkimPair;
  let closeMx: () => Promise<void>;

  let emailId = '';
  const rids: Record<string, string> = {};
  const delivered: Record<string, Received> = {};

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const domainId = org.domains['acme.test']!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    dkim = await giveDkimKey(api.deps.sql, domainId);
    relay = await startRelay(api);
    sink = await startSink();
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    deps = workerDepsFor(api, { OUTBOUND_PORT: String(sink.port), DNS_SERVERS: dns.server });
    delivery = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
    const mx = createMxServer(
      {
        config: api.config,
        sql: api.deps.sql,
        queues: api.deps.queues,
        logger: createLogger('silent', 'mx-test'),
        prom: api.deps.prom,
      },
      { maxBytes: 1024 * 1024 },
    );
    await new Promise<void>((resolve) => mx.listen(0, '127.0.0.1', resolve));
    mxPort = (mx.server.address() as AddressInfo).port;
    const inbound = startInboundWorker(deps);
    closeMx = track('mx + inbound worker', async () => {
      await new Promise<void>((resolve) => mx.close(() => resolve()));
      await inbound.close();
    });
  });

  after(async () => {
    await closeMx();
    await delivery.close();
    await deps.close();
    await relay.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  async function mxSession(rcpt: string, message: string, from: string) {
    const { client, greeting } = await RawSmtp.open(mxPort);
    try {
      expect(greeting.code).to.equal(220);
      expect((await client.cmd('EHLO mail.dest.test')).code).to.equal(250);
      expect((await client.cmd(`MAIL FROM:<${from}>`)).code).to.equal(250);
      expect((await client.cmd(`RCPT TO:<${rcpt}>`)).code).to.equal(250);
      return await client.data(message);
    } finally {
      await client.close();
    }
  }

  it('a nodemailer client sends through the relay; the worker delivers it to the MX like an API send', async () => {
    const key = await org.mint({ permission: 'SEND' });
    const info = await relay.transport(key.id, key.token).sendMail({
      from: 'Acme <hello@acme.test>',
      to: ['pat@dest.test', 'sam@dest.test'],
      subject: 'Your receipt',
      text: 'Thanks for your order.',
      messageId: `<${CLIENT_MESSAGE_ID}>`,
    });
    expect(info.response).to.match(/^250 .*queued as em_\w+/);
    emailId = /queued as (em_\w+)/.exec(info.response ?? '')![1]!;

    await waitFor('both recipients delivered', async () => {
      const rows = await api.deps.sql<{ id: string; email: string; status: string }[]>`
        select id, email, status from email_recipients where email_id = ${emailId}`;
      for (const r of rows) rids[r.email] = r.id;
      return rows.length === 2 && rows.every((r) => r.status === 'delivered');
    });

    for (const address of ['pat@dest.test', 'sam@dest.test']) {
      const msg = sink.received.find((m) => m.rcptTo.includes(address))!;
      expect(msg, address).to.not.equal(undefined);
      delivered[address] = msg;
      expect(msg.mailFrom).to.match(/^b\+.+@bounces\.acme\.test$/);
      expect(parseVerpAddress(msg.mailFrom, deps.config.secretKey)).to.equal(rids[address]);
      expect(msg.raw.toString()).to.match(new RegExp(`^Message-ID: <${CLIENT_MESSAGE_ID}>`, 'mi'));
      const result = await dkimVerify(msg.raw, {
        resolver: async (name: string, rr: string) => {
          if (rr === 'TXT' && name === 'tern._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${dkim.publicB64}`]];
          throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        },
      });
      expect(result.results[0]!.status.result).to.equal('pass');
      expect(result.results[0]!.signingDomain).to.equal('acme.test');
    }
    const types = await api.deps.sql<{ type: string }[]>`
      select type from events where email_id = ${emailId} and recipient = 'pat@dest.test' order by id`;
    expect(types.map((t) => t.type)).to.deep.equal(['email.sent', 'email.delivered']);
  });

  it('a reply to it at the MX fires email.received with its email_id (threaded by the client’s Message-ID)', async () => {
    const reply = [
      'From: Pat <pat@dest.test>',
      'To: support@reply.acme.test',
      'Subject: Re: Your receipt',
      'Message-ID: <reply-e2e@dest.test>',
      `In-Reply-To: <${CLIENT_MESSAGE_ID}>`,
      `References: <${CLIENT_MESSAGE_ID}>`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Where is my parcel?',
      '',
    ].join('\r\n');
    const data = await mxSession('support@reply.acme.test', reply, 'pat@dest.test');
    expect(data.code).to.equal(250);
    const inboundId = /queued as (inb_\w+)/.exec(data.text)![1]!;
    const event = await waitFor('email.received', async () => {
      const [e] = await api.deps.sql<{ type: string; email_id: string | null }[]>`
        select type, email_id from events where inbound_id = ${inboundId}`;
      return e;
    });
    expect(event).to.deep.equal({ type: 'email.received', email_id: emailId });
  });

  it('a DSN for it fires email.bounced; an ARF report fires email.complained', async () => {
    const dsn = fixture('postfix-dsn-user-unknown.eml', {
      VERP: delivered['pat@dest.test']!.mailFrom,
      RCPT: 'pat@dest.test',
      MESSAGE_ID: CLIENT_MESSAGE_ID,
    });
    expect((await mxSession(delivered['pat@dest.test']!.mailFrom, dsn, '')).code).to.equal(250);
    const arf = fixture('yahoo-arf-abuse.eml', {
      VERP: delivered['sam@dest.test']!.mailFrom,
      RCPT: 'sam@dest.test',
      MESSAGE_ID: CLIENT_MESSAGE_ID,
    });
    expect((await mxSession(delivered['sam@dest.test']!.mailFrom, arf, '')).code).to.equal(250);

    const bounced = await waitFor('email.bounced', async () => {
      const [e] = await api.deps.sql<{ email_id: string; bounce_type: string }[]>`
        select email_id, bounce_type from events where recipient_id = ${rids['pat@dest.test']!} and type = 'email.bounced'`;
      return e;
    });
    expect(bounced).to.deep.equal({ email_id: emailId, bounce_type: 'hard' });
    const complained = await waitFor('email.complained', async () => {
      const [e] = await api.deps.sql<{ email_id: string; recipient: string }[]>`
        select email_id, recipient from events where recipient_id = ${rids['sam@dest.test']!} and type = 'email.complained'`;
      return e;
    });
    expect(complained).to.deep.equal({ email_id: emailId, recipient: 'sam@dest.test' });
    const sups = await api.deps.sql<{ email: string; reason: string }[]>`
      select email, reason from suppressions where org_id = ${org.organization.id} order by email`;
    expect(sups).to.deep.equal([
      { email: 'pat@dest.test', reason: 'hard_bounce' },
      { email: 'sam@dest.test', reason: 'complaint' },
    ]);
  });
});
