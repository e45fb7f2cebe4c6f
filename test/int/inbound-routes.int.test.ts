// Issue 17 item 5 through the real MX, queues, delivery and API: a domain's inbound routes
// (PATCH /domains/{id}), refusals at RCPT, email.received with stripped_text, mailbox_hash, the
// sender's SPF/DKIM/DMARC and downloadable attachments, and forwarding through Tern's delivery
// with an SRS envelope sender (bounces back to it, loops capped).
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { createTransport } from 'nodemailer';
import { newId } from '../../shared/ids.js';
import { parseSrsAddress } from '../../shared/mail/srs.js';
import { parseLimits, ParseThreads } from '../../shared/mail/bounded-parse.js';
import { processInbound } from '../../workers/inbound.js';
import { MAX_FORWARD_HOPS } from '../../workers/inbound-forward.js';
import { MX_HOST, startE2e, type E2eStack } from '../helpers/e2e-stack.js';
import { fixture } from '../helpers/inbound-fixtures.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';

const ROUTES = [
  { match: 'support@acme.test', action: 'webhook' },
  { match: 'billing@acme.test', action: 'forward', forward_to: 'Team@Dest.test' },
  { match: 'spam@acme.test', action: 'reject' },
];

describe('inbound routes: webhook, forward, reject (MX → worker → API, delivery)', () => {
  let s: E2eStack;
  let receiver: Receiver;
  let domainId: string;
  let dkimKey: string;

  before(async () => {
    s = await startE2e(() => null);
    domainId = (await s.addDomain('acme.test')).id;
    s.recipientDomain('dest.test');
    receiver = await startReceiver(() => 200);
    await s.admin('POST', '/webhooks', { url: `${receiver.url}/hook`, events: ['email.received'] }, 201);
    // sender.test: SPF allows this machine, DKIM key s1, DMARC reject. spoof.test: SPF allows another host.
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    dkimKey = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pub = pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    s.dns.txt('s1._domainkey.sender.test', [`v=DKIM1; k=rsa; p=${pub}`]);
    s.dns.txt('sender.test', ['v=spf1 ip4:127.0.0.1 ip6:::1 -all']);
    s.dns.txt('_dmarc.sender.test', ['v=DMARC1; p=reject']);
    s.dns.txt('spoof.test', ['v=spf1 ip4:192.0.2.1 -all']);
    s.dns.txt('_dmarc.spoof.test', ['v=DMARC1; p=reject']);
  });
  after(async () => {
    await receiver?.close();
    await s?.close();
  });

  async function send(mail: Record<string, unknown>, opts: { dkim?: boolean; from?: string } = {}) {
    const transport = createTransport({
      host: '127.0.0.1',
      port: s.mxPort,
      secure: false,
      ignoreTLS: true,
      name: 'client.sender.test',
      ...(opts.dkim ? { dkim: { domainName: 'sender.test', keySelector: 's1', privateKey: dkimKey } } : {}),
    });
    try {
      const info = await transport.sendMail({ from: opts.from ?? 'Pat <pat@sender.test>', ...mail });
      return /queued as (inb_[0-9A-Z]+)/.exec(info.response)![1]!;
    } finally {
      transport.close();
    }
  }

  const processed = (id: string) =>
    waitFor(`inbound ${id} processed`, async () => {
      const [row] = await s.api.deps.sql`select * from inbound_messages where id = ${id} and status = 'processed'`;
      return row;
    });

  it('stores routes, shows the domain’s own MX record while enabled, and refuses bad routes (422)', async () => {
    const off = await s.api.request('GET', `/domains/${domainId}`, { token: s.org.key.token });
    expect(off.json.inbound).to.deep.equal({ enabled: false, routes: [] });
    expect(off.json.records.map((r: { record: string }) => r.record)).to.not.include('MX_INBOUND');
    expect((await s.mailToMx('pat@sender.test', 'support@acme.test', 'Subject: x\r\n\r\nx\r\n')).code).to.equal(550);

    const on = await s.admin('PATCH', `/domains/${domainId}`, { inbound: { enabled: true, routes: ROUTES } }, 200);
    expect(on.json.inbound.routes[1]).to.deep.equal({
      match: 'billing@acme.test',
      action: 'forward',
      forward_to: 'team@dest.test',
    });
    const mx = on.json.records.find((r: { record: string }) => r.record === 'MX_INBOUND');
    expect(mx).to.include({ name: 'acme.test', type: 'MX', value: MX_HOST, priority: 10, status: 'pending' });
    s.dns.mx('acme.test', [{ exchange: MX_HOST, priority: 10 }]);
    const checked = await s.admin('POST', `/domains/${domainId}/verify`, undefined, 200);
    expect(checked.json.records.find((r: { record: string }) => r.record === 'MX_INBOUND').status).to.equal('verified');

    const bad = await s.api.request('PATCH', `/domains/${domainId}`, {
      token: s.org.key.token,
      body: { inbound: { routes: [{ match: 'x@other.test', action: 'webhook' }] } },
    });
    expect(bad.status).to.equal(422);
    expect(bad.json.error.code).to.equal('validation_error');
    expect(bad.json.error.message).to.contain('routes[0].match');
    const sendKey = await s.org.mint({ permission: 'SEND' });
    const forbidden = await s.api.request('PATCH', `/domains/${domainId}`, {
      token: sendKey.token,
      body: { inbound: { enabled: false } },
    });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.json.error.code).to.equal('forbidden');
  });

  it('refuses at RCPT the reject route and addresses no route matches (550 5.1.1)', async () => {
    for (const rcpt of ['spam@acme.test', 'nobody@acme.test', 'x@sub.acme.test']) {
      const reply = await s.mailToMx('pat@sender.test', rcpt, 'Subject: x\r\n\r\nx\r\n');
      expect(reply.code, rcpt).to.equal(550);
      expect(reply.text).to.match(/^5\.1\.1 /);
    }
  });

  it('delivers a webhook route: stripped_text, mailbox_hash, SPF/DKIM/DMARC pass, attachments to download', async () => {
    const pdf = Buffer.from('%PDF-1.4 invoice bytes \u0000\u00ff', 'latin1');
    const id = await send(
      {
        to: 'support+ticket-42@acme.test',
        subject: 'Re: your ticket',
        text: 'It works now, thanks!\n\nOn Mon, 3 Mar 2025 at 10:00, Acme <support@acme.test> wrote:\n> Try again?\n',
        attachments: [{ filename: 'invoice.pdf', content: pdf, contentType: 'application/pdf' }],
      },
      { dkim: true },
    );
    const [hook] = await receiver.waitForRequests(1, (r) => r.raw.includes(id), 20_000);
    const body = JSON.parse(hook!.raw.toString());
    expect(body.type).to.equal('email.received');
    expect(body.data).to.deep.include({
      inbound_id: id,
      from: 'pat@sender.test',
      stripped_text: 'It works now, thanks!',
      mailbox_hash: 'ticket-42',
      auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
    });
    expect(body.data.attachments).to.have.length(1);
    const att = body.data.attachments[0];
    expect(att).to.include({ filename: 'invoice.pdf', content_type: 'application/pdf', size: pdf.length });
    expect(att.id).to.match(/^att_[0-9A-Z]{26}$/);

    const got = await s.admin('GET', `/inbound/${id}`, undefined, 200);
    expect(got.json).to.deep.include({ stripped_text: 'It works now, thanks!', mailbox_hash: 'ticket-42' });
    expect(got.json.route).to.deep.equal({ match: 'support@acme.test', action: 'webhook' });
    expect(got.json.attachments[0].id).to.equal(att.id);

    const file = await s.api.request('GET', `/inbound/${id}/attachments/${att.id}`, { token: s.org.key.token });
    expect(file.status).to.equal(200);
    expect(file.headers.get('content-type')).to.equal('application/pdf');
    expect(file.headers.get('content-disposition')).to.match(/^attachment; filename="invoice\.pdf"/);
    expect(
      Buffer.from(
        await (
          await fetch(`${s.api.url}/api/v1/inbound/${id}/attachments/${att.id}`, {
            headers: { authorization: `Bearer ${s.org.key.token}` },
          })
        ).arrayBuffer(),
      ).equals(pdf),
    ).to.equal(true);
    const sendKey = await s.org.mint({ permission: 'SEND' });
    const denied = await s.api.request('GET', `/inbound/${id}/attachments/${att.id}`, { token: sendKey.token });
    expect(denied.status).to.equal(403);
    expect(denied.json.error.code).to.equal('forbidden');
    const missing = await s.api.request('GET', `/inbound/${id}/attachments/att_00000000000000000000000000`, {
      token: s.org.key.token,
    });
    expect(missing.status).to.equal(404);
    expect(missing.json.error.code).to.equal('not_found');
  });

  it('reports a spoofed sender: SPF fail, no DKIM, DMARC fail', async () => {
    const id = await send({ to: 'support@acme.test', subject: 'Urgent', text: 'Pay now' }, { from: 'ceo@spoof.test' });
    const row = await processed(id);
    expect(row.auth).to.deep.equal({ spf: 'fail', dkim: 'none', dmarc: 'fail' });
    expect(row.mailbox_hash).to.equal(null);
  });

  it('forwards through Tern’s delivery with an SRS envelope sender, and takes its bounce back', async () => {
    const id = await send({ to: 'billing+march@acme.test', subject: 'Invoice 7', text: 'Please find it attached.' });
    const row = await processed(id);
    expect(row.kind).to.equal('forward');
    expect(row.forward_email_id).to.match(/^em_/);
    const copy = await waitFor('the forwarded copy at the destination', async () =>
      s.sink.received.find((m) => m.raw.includes('Invoice 7')),
    );
    expect(copy.rcptTo).to.deep.equal(['team@dest.test']);
    expect(copy.mailFrom).to.match(/^SRS0=[a-z2-7]{4}=[a-z2-7]{2}=sender\.test=pat@bounces\.acme\.test$/);
    expect(parseSrsAddress(copy.mailFrom, s.api.config.secretKey)).to.equal('pat@sender.test');
    const text = copy.raw.toString();
    // The domain's DKIM signature on top, then the trace fields, then the message as received.
    expect(text).to.match(/^DKIM-Signature: [^]*?d=acme\.test[^]*?\r\nReceived: from client\.sender\.test/);
    expect(text).to.contain(`X-Tern-Forwarded: ${id}`);
    expect(text).to.contain('Please find it attached.');
    const email = await s.admin('GET', `/emails/${row.forward_email_id}`, undefined, 200);
    expect(email.json).to.include({ kind: 'forward' });

    const dsn = fixture('postfix-dsn-user-unknown.eml', {
      VERP: copy.mailFrom,
      RCPT: 'team@dest.test',
      MESSAGE_ID: 'whatever@sender.test',
    });
    expect((await s.mailToMx('', copy.mailFrom, dsn)).code).to.equal(250);
    const bounced = await waitFor('the forward’s bounce', async () => {
      const [e] = await s.api.deps.sql`
        select * from events where email_id = ${row.forward_email_id} and type = 'email.bounced'`;
      return e;
    });
    expect(bounced).to.include({ bounce_type: 'hard', recipient: 'team@dest.test' });
    const forged = copy.mailFrom.replace(/^SRS0=[a-z2-7]{4}/, 'SRS0=aaaa');
    expect((await s.mailToMx('', forged, dsn)).code).to.equal(550);
  });

  it('forwards once when two runs of the job process the message at the same time (a lock takeover)', async () => {
    const first = await processed(
      await send({ to: 'billing@acme.test', subject: 'Invoice 8', text: 'Twice at once.' }),
    );
    // The same message stored again, with no job: two runs of its job start together.
    const id = newId('inb');
    await s.api.deps.sql`
      insert into inbound_messages (id, org_id, domain_id, source, mail_from, rcpt_to, remote_address, raw, size, helo)
      select ${id}, org_id, domain_id, source, mail_from, rcpt_to, remote_address, raw, size, helo
      from inbound_messages where id = ${first.id}`;
    const parser = new ParseThreads(parseLimits(s.api.config), 2);
    try {
      await Promise.all([processInbound(s.deps, parser, id), processInbound(s.deps, parser, id)]);
    } finally {
      await parser.close();
    }
    const [row] = await s.api.deps.sql`select status, forward_email_id from inbound_messages where id = ${id}`;
    expect(row!.status).to.equal('processed');
    const copies = await s.api.deps.sql`
      select id from emails where org_id = ${s.org.organization.id}
        and tags @> ${s.api.deps.sql.json([{ name: 'inbound_id', value: id }])}`;
    expect(copies.map((c) => c.id)).to.deep.equal([row!.forward_email_id]);
  });

  describe('forwards of forwards', () => {
    before(async () => {
      for (const name of ['beta.test', 'gamma.test', 'delta.test']) {
        const { id } = await s.addDomain(name);
        const routes = [
          { match: `hop@${name}`, action: 'forward', forward_to: `after-${name.split('.')[0]}@dest.test` },
          { match: `loop@${name}`, action: 'forward', forward_to: 'loop@dest.test' },
        ];
        await s.admin('PATCH', `/domains/${id}`, { inbound: { enabled: true, routes } }, 200);
      }
    });

    /** The copy the destination received for `rcpt` carrying `marker`. */
    const copyFor = (rcpt: string, marker: string, nth = 0) =>
      waitFor(`the copy for ${rcpt}`, async () => {
        const copies = s.sink.received.filter((m) => m.rcptTo.includes(rcpt) && m.raw.includes(marker));
        return copies[nth];
      });

    /** The destination hands the copy to the next forwarder: Tern's MX, for `rcpt`. */
    async function passOn(copy: { mailFrom: string; raw: Buffer | string }, rcpt: string) {
      const reply = await s.mailToMx(copy.mailFrom, rcpt, copy.raw.toString());
      expect(reply.code, reply.text).to.equal(250);
      return await processed(/queued as (inb_[0-9A-Z]+)/.exec(reply.text)![1]!);
    }

    it('forwards through three hops with SRS1 senders of bounded length, and takes a bounce at the last', async () => {
      await send({ to: 'hop@beta.test', subject: 'Three hops', text: 'Hop by hop.' });
      const first = await copyFor('after-beta@dest.test', 'Three hops');
      expect(first.mailFrom).to.match(/^SRS0=[a-z2-7]{4}=[a-z2-7]{2}=sender\.test=pat@bounces\.beta\.test$/);
      const srs0Part = first.mailFrom.slice('SRS0'.length, first.mailFrom.indexOf('@'));

      const second = await passOn(first, 'hop@gamma.test');
      expect(second.forward_email_id, second.error).to.match(/^em_/);
      const copy2 = await copyFor('after-gamma@dest.test', 'Three hops');
      // SRS1: the first forwarder's host and its SRS0 part, under this install's hash.
      expect(copy2.mailFrom).to.equal(
        `SRS1=${/^SRS1=([a-z2-7]{4})=/.exec(copy2.mailFrom)?.[1]}=bounces.beta.test=${srs0Part}@bounces.gamma.test`,
      );
      // A bounce to it is for the first forwarder's SRS0 address.
      expect(parseSrsAddress(copy2.mailFrom, s.api.config.secretKey)).to.equal(first.mailFrom);

      const third = await passOn(copy2, 'hop@delta.test');
      expect(third.error).to.equal(null);
      expect(third.forward_email_id).to.match(/^em_/);
      const copy3 = await copyFor('after-delta@dest.test', 'Three hops');
      expect(copy3.mailFrom).to.match(
        /^SRS1=[a-z2-7]{4}=bounces\.beta\.test==[a-z2-7]{4}=[a-z2-7]{2}=sender\.test=pat@bounces\.delta\.test$/,
      );
      expect(copy3.mailFrom.indexOf('@')).to.be.at.most(64);
      expect(copy3.raw.toString().match(/^X-Tern-Forwarded: /gm)).to.have.length(3);

      // A bounce of the third copy comes back to its SRS1 address: the third forward's bounce.
      const dsn = fixture('postfix-dsn-user-unknown.eml', {
        VERP: copy3.mailFrom,
        RCPT: 'after-delta@dest.test',
        MESSAGE_ID: 'whatever@sender.test',
      });
      expect((await s.mailToMx('', copy3.mailFrom, dsn)).code).to.equal(250);
      const bounced = await waitFor('the third forward’s bounce', async () => {
        const [e] = await s.api.deps.sql`
          select * from events where email_id = ${third.forward_email_id} and type = 'email.bounced'`;
        return e;
      });
      expect(bounced).to.include({ bounce_type: 'hard', recipient: 'after-delta@dest.test' });
      const forged = copy3.mailFrom.replace(/^SRS1=[a-z2-7]{4}/, 'SRS1=aaaa');
      expect((await s.mailToMx('', forged, dsn)).code).to.equal(550);
    });

    it(`stops a loop at MAX_FORWARD_HOPS (${MAX_FORWARD_HOPS}) forwards, the message stored with the reason`, async () => {
      await send({ to: 'loop@gamma.test', subject: 'Round and round', text: 'Loop.' });
      let copy = await copyFor('loop@dest.test', 'Round and round');
      const rows = [];
      // The destination forwards every copy back to Tern, which forwards it to the destination.
      for (let hop = 0; ; hop++) {
        const row = await passOn(copy, 'loop@beta.test');
        rows.push(row);
        if (!row.forward_email_id) break;
        copy = await copyFor('loop@dest.test', 'Round and round', hop + 1);
        expect(copy.mailFrom.indexOf('@')).to.be.at.most(64);
      }
      // The first copy carried one X-Tern-Forwarded field (gamma's); four more forwards make five.
      expect(rows.map((r) => r.forward_email_id !== null)).to.deep.equal([true, true, true, true, false]);
      expect(rows.at(-1)!.error).to.equal(
        `not forwarded: already forwarded ${MAX_FORWARD_HOPS} times (a forwarding loop)`,
      );
    });
  });

  it('does not forward a looping message, nor one with a null sender; refuses too many Received fields (554 5.4.6)', async () => {
    const looping = [
      ...Array.from({ length: 5 }, (_, i) => `X-Tern-Forwarded: inb_loop${i}`),
      'From: pat@sender.test',
      'To: billing@acme.test',
      'Subject: loop',
      '',
      'again',
      '',
    ].join('\r\n');
    const loopReply = await s.mailToMx('pat@sender.test', 'billing@acme.test', looping);
    const loopRow = await processed(/queued as (inb_[0-9A-Z]+)/.exec(loopReply.text)![1]!);
    expect(loopRow.forward_email_id).to.equal(null);
    expect(loopRow.error).to.match(/forwarding loop/);

    const bounce = 'From: MAILER-DAEMON@sender.test\r\nTo: billing@acme.test\r\nSubject: x\r\n\r\nx\r\n';
    const nullReply = await s.mailToMx('', 'billing@acme.test', bounce);
    const nullRow = await processed(/queued as (inb_[0-9A-Z]+)/.exec(nullReply.text)![1]!);
    expect(nullRow.forward_email_id).to.equal(null);
    expect(nullRow.error).to.match(/null sender/);

    const hops = Array.from({ length: 51 }, (_, i) => `Received: from hop${i}.example by hop${i + 1}.example`);
    const many = [...hops, 'From: pat@sender.test', 'Subject: hops', '', 'x', ''].join('\r\n');
    const refused = await s.mailToMx('pat@sender.test', 'support@acme.test', many);
    expect(refused.code).to.equal(554);
    expect(refused.text).to.match(/^5\.4\.6 /);
  });
});
