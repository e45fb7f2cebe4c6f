// Issue 4, "Done when": a live send from the API, through the queue and the delivery worker, to a
// local MX found through DNS; the message is DKIM-signed with the key the domain published
// (verified by mailauth against the DNS record), carries the right Message-ID, VERP return path,
// unsubscribe headers and tracking; each SMTP outcome becomes the right events, recipient
// statuses and suppressions, read back through the API.
import { expect } from 'chai';
import { createPublicKey } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { parseVerpAddress } from '../../shared/mail/verp.js';
import { startE2e, type E2eStack } from '../helpers/e2e-stack.js';
import type { Received } from '../helpers/smtp-sink.js';
import { waitFor } from '../helpers/wait.js';

/** The top-level header fields of a raw message, unfolded, by lower-case name (first one wins). */
function headerFields(raw: Buffer): Record<string, string> {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  const out: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).toLowerCase();
    out[name] ??= line.slice(i + 1).trim();
  }
  return out;
}

type Ev = { type: string; recipient: string; bounce_type?: string; detail?: string };

describe('end to end: API → delivery → MX (issue 4)', function () {
  this.timeout(60_000);
  let s: E2eStack;
  let domainId: string;
  let dkimPublic: string;
  let sendKey: string;
  let topicId: string;

  before(async () => {
    s = await startE2e((rcpt, n) => {
      const local = rcpt.split('@')[0]!;
      if (local.startsWith('later') && n === 1) return { code: 451, message: '4.2.1 mailbox busy, try later' };
      if (local.startsWith('gone'))
        return { code: 550, message: `5.1.1 <${rcpt}>: Recipient address rejected: User unknown` };
      if (local.startsWith('full')) return { code: 552, message: '5.2.2 <' + rcpt + '>: Mailbox full' };
      if (local.startsWith('blocked')) {
        return {
          code: 554,
          message: '5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org',
        };
      }
      return null;
    });
    s.recipientDomain('dest.test');
    ({ id: domainId, dkimPublic } = await s.addDomain('acme.test'));
    await s.admin('PATCH', `/domains/${domainId}`, { open_tracking: true, click_tracking: true }, 200);
    sendKey = (await s.org.mint({ permission: 'SEND' })).token;
    topicId = (await s.admin('POST', '/topics', { name: 'News', default_subscription: 'opt_in' }, 201)).json.id;
  });
  after(async () => await s.close());

  async function send(to: string[], extra: Record<string, unknown> = {}): Promise<string> {
    const res = await s.api.request('POST', '/emails', {
      token: sendKey,
      body: {
        from: 'Acme <news@acme.test>',
        to,
        subject: 'Spring news',
        html: '<html><body><p>Hello</p><a href="https://example.org/sale?x=1&amp;y=2">Sale</a></body></html>',
        text: 'Hello',
        ...extra,
      },
    });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  }

  async function events(emailId: string): Promise<Ev[]> {
    const res = await s.api.request('GET', `/emails/${emailId}/events`, { token: sendKey });
    expect(res.status).to.equal(200);
    return res.json.data as Ev[];
  }

  const received = (rcpt: string): Received | undefined => s.sink.received.find((m) => m.rcptTo.includes(rcpt));

  it('delivers a DKIM-signed message with Message-ID, VERP return path, unsubscribe headers and tracking', async () => {
    const id = await send(['ann@dest.test'], { topic_id: topicId });
    const msg = await waitFor('the message at the MX', async () => received('ann@dest.test'));

    const verdict = await dkimVerify(msg.raw, {
      resolver: (name: string, rr: string) => s.resolver.resolve(name, rr as 'TXT') as Promise<never>,
    });
    const sig = verdict.results[0]!;
    expect(sig.status.result, JSON.stringify(sig.status)).to.equal('pass');
    expect(sig.signingDomain).to.equal('acme.test');
    expect(sig.selector).to.equal('tern');
    // The key it verified with is the one POST /domains returned and DNS published.
    const used = createPublicKey((sig as typeof sig & { publicKey: string }).publicKey)
      .export({ type: 'spki', format: 'der' })
      .toString('base64');
    expect(used).to.equal(dkimPublic);

    const parsed = await simpleParser(msg.raw);
    expect(parsed.messageId).to.equal(`<${id}@acme.test>`);
    expect(msg.mailFrom).to.match(/^b\+[^@]+@bounces\.acme\.test$/);
    const verp = parseVerpAddress(msg.mailFrom, s.deps.config.secretKey);
    expect(verp, 'VERP token verifies').to.not.equal(null);
    const head = headerFields(msg.raw);
    expect(head['list-unsubscribe-post']).to.equal('List-Unsubscribe=One-Click');
    expect(head['list-unsubscribe']).to.match(new RegExp(`^<${s.api.url}/t/u/[^>]+>`));
    // RFC 8058 §4: the signature covers both unsubscribe headers.
    const signed = /\bh=([^;]+)/.exec(head['dkim-signature']!)![1]!.toLowerCase().split(':');
    expect(signed).to.include.members(['list-unsubscribe', 'list-unsubscribe-post', 'message-id', 'from']);
    const html = String(parsed.html);
    expect(html).to.not.contain('https://example.org/sale');
    expect(html).to.match(new RegExp(`href="${s.api.url}/t/c/[^"]+"`));
    expect(html).to.match(new RegExp(`<img[^>]+src="${s.api.url}/t/o/[^"]+"`));

    // The rewritten link leads where the original did.
    const click = /href="([^"]*\/t\/c\/[^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
    const res = await fetch(click, { redirect: 'manual' });
    expect(res.status).to.equal(302);
    expect(res.headers.get('location')).to.equal('https://example.org/sale?x=1&y=2');

    await waitFor('email.delivered', async () => (await events(id)).some((e) => e.type === 'email.delivered'));
    expect((await events(id)).map((e) => e.type).slice(0, 2)).to.deep.equal(['email.sent', 'email.delivered']);
  });

  it('leaves the unsubscribe headers out of a send without a topic', async () => {
    await send(['bob@dest.test']);
    const msg = await waitFor('the message at the MX', async () => received('bob@dest.test'));
    const parsed = await simpleParser(msg.raw);
    expect(parsed.headers.has('list-unsubscribe')).to.equal(false);
    expect(parsed.headers.has('list-unsubscribe-post')).to.equal(false);
  });

  it('turns each SMTP outcome into its events, recipient status and suppressions', async () => {
    const rcpts = ['ok@dest.test', 'later@dest.test', 'gone@dest.test', 'full@dest.test', 'blocked@dest.test'];
    const id = await send(rcpts);
    const terminal = ['delivered', 'bounced'];
    const email = await waitFor('every recipient in a terminal state', async () => {
      const res = await s.api.request('GET', `/emails/${id}`, { token: sendKey });
      const rs = res.json.recipients as { email: string; status: string }[];
      return rs.every((r) => terminal.includes(r.status)) ? res.json : null;
    });
    const statuses = Object.fromEntries(
      (email.recipients as { email: string; status: string }[]).map((r) => [r.email, r.status]),
    );
    expect(statuses).to.deep.equal({
      'ok@dest.test': 'delivered',
      'later@dest.test': 'delivered',
      'gone@dest.test': 'bounced',
      'full@dest.test': 'bounced',
      'blocked@dest.test': 'bounced',
    });

    const evs = await events(id);
    const of = (r: string) =>
      evs
        .filter((e) => e.recipient === r)
        .map((e) => [e.type, e.bounce_type ?? null, e.detail ?? null].filter((x) => x !== null).join(' '));
    expect(of('ok@dest.test')).to.deep.equal(['email.sent', 'email.delivered']);
    expect(of('later@dest.test')).to.deep.equal([
      'email.sent',
      'email.delivery_delayed RecipientServerError',
      'email.delivered',
    ]);
    expect(of('gone@dest.test')).to.deep.equal(['email.sent', 'email.bounced hard NoEmail']);
    expect(of('full@dest.test')).to.deep.equal(['email.sent', 'email.bounced soft MailboxFull']);
    expect(of('blocked@dest.test')).to.deep.equal(['email.sent', 'email.bounced soft IPFailure']);
    expect(s.sink.attempts.get('later@dest.test')).to.equal(2);

    // Only the bad address is suppressed: never a recipient for the sender's own problem.
    const sup = await s.api.request('GET', '/suppressions', { token: sendKey });
    expect(sup.status).to.equal(200);
    const rows = (sup.json.data as { email: string; reason: string; source_email_id: string }[]).map((r) => [
      r.email,
      r.reason,
      r.source_email_id,
    ]);
    expect(rows).to.deep.equal([['gone@dest.test', 'hard_bounce', id]]);

    // The suppressed address is rejected on the next send, without an SMTP conversation.
    const before = s.sink.attempts.get('gone@dest.test');
    const again = await send(['gone@dest.test']);
    await waitFor('email.rejected', async () => (await events(again)).some((e) => e.type === 'email.rejected'));
    expect(s.sink.attempts.get('gone@dest.test')).to.equal(before);
  });
});
