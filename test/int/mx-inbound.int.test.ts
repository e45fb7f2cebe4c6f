import { expect } from 'chai';
import { unsubscribeMailbox, verpToken } from '../../shared/mail/verp.js';
import { fixture } from '../helpers/inbound-fixtures.js';
import { insertEmailRows, type SeededEmail } from '../helpers/mail-rows.js';
import { smtpSession, startMxWithWorker } from '../helpers/mx.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const MAX_BYTES = 64 * 1024;

describe('MX and inbound worker', () => {
  let api: TestApi;
  let org: SeededOrg;
  let port: number;
  let closeAll: () => Promise<void>;

  before(async () => {
    api = await startApi({ env: { INBOUND_SECRET: 'inbound-secret-for-tests-0123456789' } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'pending.test', verified: false }] });
    const mx = await startMxWithWorker(api, { maxBytes: MAX_BYTES });
    port = mx.port;
    closeAll = mx.close;
  });
  after(async () => {
    await closeAll();
    await api.close();
  });

  async function sentEmail(mode: 'live' | 'test' = 'live'): Promise<SeededEmail & { messageId: string; verp: string }> {
    const d = org.domains['acme.test']!;
    const e = await insertEmailRows(api.deps.sql, {
      orgId: org.organization.id,
      domainId: d.id,
      domainName: d.name,
      mode,
      to: ['pat@example.net'],
    });
    return {
      ...e,
      messageId: `${e.emailId}@acme.test`,
      verp: `b+${verpToken(e.recipients[0]!.id, api.config.secretKey)}@bounces.acme.test`,
    };
  }

  const session = (rcpts: string[], message: string, from?: string) => smtpSession(port, rcpts, message, from);

  const reply = (inReplyTo: string | null, extra = '') =>
    [
      'From: Pat <pat@example.net>',
      'To: Acme Support <support@reply.acme.test>',
      'Subject: Re: Your receipt',
      'Message-ID: <reply-1@example.net>',
      ...(inReplyTo ? [`In-Reply-To: <${inReplyTo}>`, `References: <other@example.net> <${inReplyTo}>`] : []),
      extra,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Thanks! One question about the order.',
      '',
    ]
      .filter((l, i, a) => l !== '' || i >= a.indexOf('Content-Type: text/plain; charset=utf-8'))
      .join('\r\n');

  async function inboundRow(id: string) {
    return await waitFor('the inbound message to be processed', async () => {
      const [row] = await api.deps.sql`select * from inbound_messages where id = ${id} and status = 'processed'`;
      return row;
    });
  }

  it('refuses recipients that are not reply.<verified domain> or a valid VERP address with 550 5.1.1', async () => {
    const { rcptReplies } = await session(
      [
        'x@acme.test',
        'x@reply.other.test',
        'x@reply.pending.test',
        'b+bogus.token@bounces.acme.test',
        'x@bounces.acme.test',
      ],
      '',
    );
    for (const r of rcptReplies) {
      expect(r.code).to.equal(550);
      expect(r.text).to.match(/^5\.1\.1 /);
    }
  });

  it('stores a threaded reply, answers with its id, and fires email.received with email_id', async () => {
    const sent = await sentEmail();
    const { rcptReplies, data } = await session(['support@reply.acme.test'], reply(sent.messageId));
    expect(rcptReplies[0]!.code).to.equal(250);
    expect(data!.code).to.equal(250);
    const id = /queued as (inb_[0-9A-Z]+)/.exec(data!.text)![1]!;
    const row = await inboundRow(id);
    expect(row.email_id).to.equal(sent.emailId);
    expect(row.kind).to.equal('reply');
    const [event] = await api.deps.sql`select * from events where inbound_id = ${id}`;
    expect(event).to.include({ type: 'email.received', email_id: sent.emailId });
    expect(event!.data).to.deep.include({
      from: 'pat@example.net',
      to: ['support@reply.acme.test'],
      subject: 'Re: Your receipt',
    });

    const got = await api.request('GET', `/inbound/${id}`, { token: org.key.token });
    expect(got.status).to.equal(200);
    expect(got.json).to.include({
      object: 'inbound',
      id,
      from: 'pat@example.net',
      subject: 'Re: Your receipt',
      email_id: sent.emailId,
      auto_reply: false,
    });
    expect(got.json.text).to.contain('One question');
    const list = await api.request('GET', '/inbound', { token: org.key.token });
    expect(list.json.data.map((m: { id: string }) => m.id)).to.include(id);
  });

  it('leaves email_id out when the reply names no message of the organization', async () => {
    const { data } = await session(['support@reply.acme.test'], reply('em_01JNOTOURS@elsewhere.test'));
    const id = /queued as (inb_[0-9A-Z]+)/.exec(data!.text)![1]!;
    const row = await inboundRow(id);
    expect(row.email_id).to.equal(null);
    const [event] = await api.deps.sql`select email_id from events where inbound_id = ${id}`;
    expect(event!.email_id).to.equal(null);
  });

  it('marks auto-replies', async () => {
    const { data } = await session(['support@reply.acme.test'], reply(null, 'Auto-Submitted: auto-replied'));
    const id = /queued as (inb_[0-9A-Z]+)/.exec(data!.text)![1]!;
    expect((await inboundRow(id)).auto_reply).to.equal(true);
  });

  // Every DSN and ARF fixture is covered by inbound-reports.int.test.ts.

  it('adds no suppression for test-mode messages', async () => {
    const sent = await sentEmail('test');
    await api.deps.sql`delete from suppressions where org_id = ${org.organization.id}`;
    const msg = fixture('postfix-dsn-user-unknown.eml', {
      VERP: sent.verp,
      RCPT: 'pat@example.net',
      MESSAGE_ID: sent.messageId,
    });
    await session([sent.verp], msg, '');
    await waitFor('the bounce event', async () => {
      const [e] = await api.deps
        .sql`select 1 from events where recipient_id = ${sent.recipients[0]!.id} and type = 'email.bounced'`;
      return e;
    });
    const sups = await api.deps.sql`select 1 from suppressions where org_id = ${org.organization.id}`;
    expect(sups).to.have.length(0);
  });

  it('unsubscribes a recipient who mails the List-Unsubscribe mailto address', async () => {
    const sent = await sentEmail();
    const mailbox = unsubscribeMailbox(sent.recipients[0]!.id, 'acme.test', api.config.secretKey);
    const { rcptReplies, data } = await session([mailbox], reply(null).replace('support@reply.acme.test', mailbox));
    expect(rcptReplies[0]!.code).to.equal(250);
    expect(data!.code).to.equal(250);
    const event = await waitFor('the unsubscribe event', async () => {
      const [e] = await api.deps
        .sql`select * from events where recipient_id = ${sent.recipients[0]!.id} and type = 'email.unsubscribed'`;
      return e;
    });
    expect(event!.email_id).to.equal(sent.emailId);
    const [sup] = await api.deps
      .sql`select reason from suppressions where org_id = ${org.organization.id} and email = 'pat@example.net' and reason = 'unsubscribe'`;
    expect(sup).to.not.equal(undefined);
    const forged = await session([mailbox.replace(/^u\+[a-z0-9]/, 'u+0')], 'x');
    expect(forged.rcptReplies[0]!.code).to.equal(550);
  });

  it('refuses an oversize message with 552 and stores nothing', async () => {
    const [before] = await api.deps.sql`select count(*)::int as n from inbound_messages`;
    const big =
      reply(null) +
      'x'
        .repeat(80)
        .concat('\r\n')
        .repeat(Math.ceil((MAX_BYTES * 1.5) / 82));
    const { data } = await session(['support@reply.acme.test'], big);
    expect(data!.code).to.equal(552);
    const [after] = await api.deps.sql`select count(*)::int as n from inbound_messages`;
    expect(after!.n).to.equal(before!.n);
  });

  it('answers 451 when the message cannot be stored, never 250', async () => {
    await api.deps.sql`alter table inbound_messages rename to inbound_messages_away`;
    try {
      const { rcptReplies, data } = await session(['support@reply.acme.test'], reply(null));
      expect(rcptReplies[0]!.code).to.equal(250);
      expect(data!.code).to.equal(451);
    } finally {
      await api.deps.sql`alter table inbound_messages_away rename to inbound_messages`;
    }
  });

  it('takes raw messages over HTTP with the inbound secret', async () => {
    const sent = await sentEmail();
    const headers = { 'content-type': 'message/rfc822', authorization: 'Bearer inbound-secret-for-tests-0123456789' };
    const res = await api.request('POST', '/api/v1/inbound/raw', { raw: reply(sent.messageId), headers });
    expect(res.status).to.equal(202);
    const id = res.json.data[0].id;
    expect((await inboundRow(id)).email_id).to.equal(sent.emailId);
    const bad = await api.request('POST', '/api/v1/inbound/raw', {
      raw: reply(null),
      headers: { ...headers, authorization: 'Bearer wrong' },
    });
    expect(bad.status).to.equal(401);
    expect(bad.json.error.code).to.equal('unauthorized');
    const nobody = await api.request('POST', '/api/v1/inbound/raw', {
      raw: reply(null).replace('support@reply.acme.test', 'x@nowhere.test'),
      headers,
    });
    expectError(nobody, 422, 'validation_error');
  });
});
