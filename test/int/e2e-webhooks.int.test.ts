// Issue 5, "Done when": a receiver on loopback, registered with POST /webhooks, gets every event
// type of the spec produced by the real pipeline (API → delivery worker → local MX → tracking
// links → Tern's MX for complaints and replies → fan-out → signed delivery), with the spec's
// headers, bodies equal to the objects the spec's tables describe, and signatures that verify.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { verify } from '../../shared/webhooks/signing.js';
import { startE2e, type E2eStack } from '../helpers/e2e-stack.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import type { Received as SmtpReceived } from '../helpers/smtp-sink.js';
import { pastTooFast } from '../helpers/tracking-rows.js';
import { sleep, waitFor } from '../helpers/wait.js';

const FIXTURES = new URL('../fixtures/inbound/', import.meta.url);
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const EMAIL_FIELDS = [
  'email_id',
  'from',
  'to',
  'subject',
  'recipient',
  'kind',
  'tags',
  'stream',
  'bounce_type',
  'detail',
  'url',
  'machine',
  'machine_reason',
];
const RECEIVED_FIELDS = [
  'inbound_id',
  'email_id',
  'from',
  'to',
  'subject',
  'stripped_text',
  'mailbox_hash',
  'auth',
  'attachments',
  'spam',
];

type Data = Record<string, unknown>;
interface Hook {
  type: string;
  created_at: string;
  data: Data;
  deliveryId: string;
}

function fixture(name: string, vars: Record<string, string>): string {
  let text = readFileSync(new URL(name, FIXTURES), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.split(`{{${k}}}`).join(v);
  return text;
}

function unfoldedHeader(raw: Buffer, name: string): string | undefined {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** The HTML part of a delivered message, with quoted-printable undone. */
function htmlOf(raw: Buffer): string {
  const text = raw.toString('latin1');
  const qp = text
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return qp;
}

describe('end to end: every webhook event type from the real pipeline (issue 5)', function () {
  this.timeout(60_000);
  let s: E2eStack;
  let receiver: Receiver;
  let secret: string;
  let liveKey: string;
  let testKey: string;
  let templateId: string;
  let topicId: string;
  const sent: Record<string, string> = {};

  before(async () => {
    s = await startE2e((rcpt, n) => {
      const local = rcpt.split('@')[0]!;
      if (local === 'later' && n === 1) return { code: 451, message: '4.2.1 mailbox busy, try later' };
      if (local === 'gone') return { code: 550, message: `5.1.1 <${rcpt}>: Recipient address rejected: User unknown` };
      if (local === 'full') return { code: 552, message: `5.2.2 <${rcpt}>: Mailbox full` };
      return null;
    });
    s.recipientDomain('dest.test');
    receiver = await startReceiver(() => 200);
    const acme = await s.addDomain('acme.test');
    await s.admin('PATCH', `/domains/${acme.id}`, { open_tracking: true, click_tracking: true }, 200);
    const nokey = await s.addDomain('nokey.test');
    // The operator lost the domain's DKIM key: its messages fail instead of going out unsigned.
    await s.api.deps.sql`update domains set dkim_private_key = null where id = ${nokey.id}`;
    const hook = await s.admin('POST', '/webhooks', { url: `${receiver.url}/hooks/tern` }, 201);
    secret = hook.json.signing_secret as string;
    liveKey = (await s.org.mint({ permission: 'SEND' })).token;
    topicId = (await s.admin('POST', '/topics', { name: 'News', default_subscription: 'opt_in' }, 201)).json.id;
    testKey = (await s.org.mint({ permission: 'SEND', mode: 'test' })).token;
    templateId = (
      await s.admin(
        'POST',
        '/templates',
        { name: 'Receipt', slug: 'receipt', subject: 'Your receipt', html: '<p>Thanks</p>', text: 'Thanks' },
        201,
      )
    ).json.id as string;
    await s.admin('POST', '/templates/receipt/publish', undefined, 200);
    const sup = await s.api.request('POST', '/suppressions', { token: liveKey, body: { email: 'sup@dest.test' } });
    expect(sup.status, sup.text).to.be.oneOf([200, 201]);
  });
  after(async () => {
    await receiver?.close();
    await s?.close();
  });

  async function send(token: string, body: Record<string, unknown>): Promise<string> {
    const res = await s.api.request('POST', '/emails', { token, body });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  }

  const atSink = (rcpt: string) =>
    waitFor(`${rcpt} at the MX`, async () => s.sink.received.find((m) => m.rcptTo.includes(rcpt)));

  function hooks(): Hook[] {
    return receiver.received.map((r) => {
      const body = JSON.parse(r.raw.toString('utf8')) as Omit<Hook, 'deliveryId'>;
      return { ...body, deliveryId: String(r.headers['tern-delivery-id']) };
    });
  }

  it('delivers every event type with the spec headers, signed, with the spec bodies', async () => {
    sent.news = await send(liveKey, {
      from: 'Acme <news@acme.test>',
      to: ['Ann <ann@dest.test>'],
      cc: ['carl@dest.test'],
      subject: 'Spring news',
      html: '<html><body><p>Hi</p><a href="https://example.org/sale">Sale</a></body></html>',
      text: 'Hi',
      topic_id: topicId,
      tags: [{ name: 'campaign', value: 'spring' }],
      kind: 'newsletter',
      stream: 'broadcast',
    });
    sent.mixed = await send(liveKey, {
      from: 'news@acme.test',
      to: ['later@dest.test', 'gone@dest.test', 'full@dest.test'],
      subject: 'Outcomes',
      text: 'Hello',
    });
    sent.suppressed = await send(liveKey, { from: 'news@acme.test', to: 'sup@dest.test', subject: 'S', text: 'x' });
    sent.nokey = await send(liveKey, { from: 'Ops <ops@nokey.test>', to: 'dan@dest.test', subject: 'N', text: 'x' });
    sent.template = await send(liveKey, {
      from: 'Acme <billing@acme.test>',
      to: 'eve@dest.test',
      template: { id: 'receipt' },
      tags: [{ name: 'order', value: 'o-1' }],
    });
    sent.test = await send(testKey, { from: 'news@acme.test', to: 'tess@dest.test', subject: 'T', text: 'x' });

    // Ann opens, clicks and unsubscribes with one click, from what the delivered message holds.
    const ann: SmtpReceived = await atSink('ann@dest.test');
    await pastTooFast(s.api.deps.sql, ['ann@dest.test']); // a person, not a gateway, clicks
    const html = htmlOf(ann.raw);
    const pixel = /<img[^>]+src="([^"]*\/t\/o\/[^"]+)"/.exec(html)![1]!;
    const click = /href="([^"]*\/t\/c\/[^"]+)"/.exec(html)![1]!;
    expect((await fetch(pixel)).status).to.equal(200);
    const redirect = await fetch(click, { redirect: 'manual' });
    expect(redirect.headers.get('location')).to.equal('https://example.org/sale');
    const unsubscribe = /<(http[^>]+)>/.exec(unfoldedHeader(ann.raw, 'List-Unsubscribe')!)![1]!;
    expect((await fetch(unsubscribe)).status).to.equal(200); // the confirmation page records nothing
    const oneClick = await fetch(unsubscribe, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).to.equal(200);

    // Carl's mailbox provider sends an abuse report to the VERP return path of his copy.
    const carl = await atSink('carl@dest.test');
    const arf = fixture('yahoo-arf-abuse.eml', {
      VERP: carl.mailFrom,
      RCPT: 'carl@dest.test',
      MESSAGE_ID: `${sent.news}@acme.test`,
    });
    expect((await s.mailToMx('', carl.mailFrom, arf)).code).to.equal(250);

    // Ann replies; the reply threads to the message by In-Reply-To.
    const reply = [
      'From: Ann <ann@dest.test>',
      'To: support@reply.acme.test',
      'Subject: Re: Spring news',
      `In-Reply-To: <${sent.news}@acme.test>`,
      'Message-ID: <reply-1@dest.test>',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Sounds good.',
    ].join('\r\n');
    expect((await s.mailToMx('ann@dest.test', 'support@reply.acme.test', reply)).code).to.equal(250);

    const expectedCount = 23;
    // On a timeout the comparison below shows which deliveries are missing.
    await receiver.waitForRequests(expectedCount).catch(() => {});
    await sleep(300); // nothing more than expected arrives late
    const got = hooks();

    for (const r of receiver.received) {
      expect(r.path).to.equal('/hooks/tern');
      expect(r.headers['content-type']).to.equal('application/json');
      expect(r.headers['user-agent']).to.equal('tern-webhooks/1');
      expect(r.headers['tern-delivery-id']).to.match(/^dlv_[0-9A-Z]{26}$/);
      expect(r.headers['tern-event-type']).to.equal(JSON.parse(r.raw.toString()).type);
      expect(String(r.headers['tern-signature'])).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verify(r.raw, String(r.headers['tern-signature']), secret)).to.equal(true);
    }
    expect(new Set(got.map((h) => h.deliveryId)).size).to.equal(got.length);

    const eventsOf = new Map<string, { type: string; recipient: string; created_at: string }[]>();
    for (const id of Object.values(sent)) {
      const token = id === sent.test ? testKey : liveKey;
      eventsOf.set(id, (await s.api.request('GET', `/emails/${id}/events`, { token })).json.data);
    }
    for (const h of got) {
      expect(h.created_at).to.match(ISO_MS);
      expect(Object.keys(h)).to.deep.equal(['type', 'created_at', 'data', 'deliveryId']);
      const order = h.type === 'email.received' ? RECEIVED_FIELDS : EMAIL_FIELDS;
      const keys = Object.keys(h.data);
      expect(keys, `${h.type} field order`).to.deep.equal(order.filter((k) => keys.includes(k)));
      if (h.type === 'email.received') continue;
      const ev = eventsOf
        .get(String(h.data.email_id))!
        .find((e) => e.type === h.type && e.recipient === h.data.recipient);
      expect(ev, `${h.type} ${String(h.data.recipient)} in GET /emails/:id/events`).to.not.equal(undefined);
      expect(h.created_at).to.equal(ev!.created_at);
    }

    const person = { machine: false, machine_reason: null };
    const news = (recipient: string) => ({
      email_id: sent.news,
      from: 'Acme <news@acme.test>',
      to: ['Ann <ann@dest.test>'],
      subject: 'Spring news',
      recipient,
      kind: 'newsletter',
      tags: [{ name: 'campaign', value: 'spring' }],
      stream: 'broadcast',
    });
    const plain = (id: string, recipient: string, subject: string, from = 'news@acme.test') => ({
      email_id: id,
      from,
      to: [recipient],
      subject,
      recipient,
      kind: null,
      tags: null,
      stream: 'transactional',
    });
    const mixed = (recipient: string) => ({
      ...plain(sent.mixed!, recipient, 'Outcomes'),
      to: ['later@dest.test', 'gone@dest.test', 'full@dest.test'],
    });
    const inbound = got.find((h) => h.type === 'email.received');
    const expected: { type: string; data: Data }[] = [
      { type: 'email.sent', data: news('ann@dest.test') },
      { type: 'email.delivered', data: news('ann@dest.test') },
      { type: 'email.opened', data: { ...news('ann@dest.test'), ...person } },
      {
        type: 'email.clicked',
        data: { ...news('ann@dest.test'), url: 'https://example.org/sale', ...person },
      },
      { type: 'email.unsubscribed', data: news('ann@dest.test') },
      { type: 'email.sent', data: news('carl@dest.test') },
      { type: 'email.delivered', data: news('carl@dest.test') },
      { type: 'email.complained', data: { ...news('carl@dest.test'), detail: 'abuse' } },
      { type: 'email.sent', data: mixed('later@dest.test') },
      { type: 'email.delivery_delayed', data: { ...mixed('later@dest.test'), detail: 'RecipientServerError' } },
      { type: 'email.delivered', data: mixed('later@dest.test') },
      { type: 'email.sent', data: mixed('gone@dest.test') },
      { type: 'email.bounced', data: { ...mixed('gone@dest.test'), bounce_type: 'hard', detail: 'NoEmail' } },
      { type: 'email.sent', data: mixed('full@dest.test') },
      { type: 'email.bounced', data: { ...mixed('full@dest.test'), bounce_type: 'soft', detail: 'MailboxFull' } },
      { type: 'email.rejected', data: { ...plain(sent.suppressed!, 'sup@dest.test', 'S'), detail: 'Suppressed' } },
      { type: 'email.sent', data: plain(sent.nokey!, 'dan@dest.test', 'N', 'Ops <ops@nokey.test>') },
      {
        type: 'email.failed',
        data: { ...plain(sent.nokey!, 'dan@dest.test', 'N', 'Ops <ops@nokey.test>'), detail: 'no DKIM key' },
      },
      ...['email.sent', 'email.delivered'].map((type) => ({
        type,
        data: {
          ...plain(sent.template!, 'eve@dest.test', 'Your receipt', 'Acme <billing@acme.test>'),
          tags: {
            template: { id: templateId, slug: 'receipt', version: 1 },
            tags: [{ name: 'order', value: 'o-1' }],
          },
        },
      })),
      // A test key's message: simulated, but its webhooks fire as normal.
      { type: 'email.sent', data: plain(sent.test!, 'tess@dest.test', 'T') },
      { type: 'email.delivered', data: plain(sent.test!, 'tess@dest.test', 'T') },
      {
        type: 'email.received',
        data: {
          inbound_id: inbound?.data.inbound_id,
          email_id: sent.news,
          from: 'ann@dest.test',
          to: ['support@reply.acme.test'],
          subject: 'Re: Spring news',
          stripped_text: 'Sounds good.',
          // dest.test publishes no SPF, DKIM key or DMARC record.
          auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
          // No attachments: the field is left out (SPEC: payloads omit fields with no value).
        },
      },
    ];
    const key = (h: { type: string; data: Data }) =>
      JSON.stringify([h.type, h.data.email_id ?? '', h.data.recipient ?? '']);
    const sort = <T extends { type: string; data: Data }>(xs: T[]) =>
      [...xs].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sort(got.map(({ type, data }) => ({ type, data })))).to.deep.equal(sort(expected));
    expect(expected).to.have.length(expectedCount);
    expect(String(inbound!.data.inbound_id)).to.match(/^inb_/);
    const stored = await s.api.request('GET', `/inbound/${String(inbound!.data.inbound_id)}`, { token: liveKey });
    expect(stored.json.email_id).to.equal(sent.news);

    // Every event type of the spec came out of the pipeline.
    expect([...new Set(got.map((h) => h.type))].sort()).to.deep.equal(
      [
        'email.sent',
        'email.delivered',
        'email.delivery_delayed',
        'email.bounced',
        'email.complained',
        'email.rejected',
        'email.opened',
        'email.clicked',
        'email.unsubscribed',
        'email.failed',
        'email.received',
      ].sort(),
    );
  });
});
