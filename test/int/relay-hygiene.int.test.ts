// The relay's edges: AUTH is offered only once the connection is encrypted (unless
// RELAY_ALLOW_INSECURE_AUTH), so a client never sends its key in clear; a message that holds a
// NUL (raw, or encoded in a field Tern stores) and a control character in X-Tern-Kind are refused
// for good with 554 5.6.0, never 451 (which a client retries for ever). The MX refuses NUL in the
// envelope with a 5xx (NUL in a message it stores as bytes: inbound-durability.int.test.ts).
import { expect } from 'chai';
import { startMx } from '../helpers/mx.js';
import { rawSession, refusal, startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { RawSmtp } from '../helpers/smtp-raw.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('SMTP relay hygiene', () => {
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let key: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    relay = await startRelay(api);
    key = await org.mint({ permission: 'SEND' });
  });
  after(async () => {
    await relay.close();
    await api.close();
  });

  const countEmails = async () => Number((await api.deps.sql<{ n: string }[]>`select count(*) as n from emails`)[0]!.n);

  const ehloInClear = async (port: number) => {
    const { client } = await RawSmtp.open(port);
    try {
      return await client.cmd('EHLO client.test');
    } finally {
      await client.close();
    }
  };

  describe('AUTH advertisement', () => {
    it('offers STARTTLS but not AUTH before TLS, and AUTH after STARTTLS', async () => {
      const clear = await ehloInClear(relay.port);
      expect(clear.code).to.equal(250);
      expect(clear.text).to.match(/^STARTTLS$/m);
      expect(clear.text).not.to.match(/AUTH/);
      const session = await rawSession(relay.port, key.id, key.token);
      try {
        expect(session.ehlo.plain).not.to.match(/AUTH/);
        expect(session.ehlo.tls).to.match(/^250[- ]AUTH PLAIN LOGIN$/m);
      } finally {
        await session.close();
      }
    });

    it('still answers 538 to AUTH sent in clear', async () => {
      const { client } = await RawSmtp.open(relay.port);
      try {
        await client.cmd('EHLO client.test');
        const reply = await client.cmd(`AUTH PLAIN ${Buffer.from(`\0${key.id}\0${key.token}`).toString('base64')}`);
        expect(reply.code).to.equal(538);
      } finally {
        await client.close();
      }
    });

    it('offers AUTH in clear with RELAY_ALLOW_INSECURE_AUTH', async () => {
      const insecure = await startRelay(api, { relayAllowInsecureAuth: true });
      try {
        expect((await ehloInClear(insecure.port)).text).to.match(/^AUTH PLAIN LOGIN$/m);
      } finally {
        await insecure.close();
      }
    });
  });

  describe('NUL and control characters (554 5.6.0, nothing stored)', () => {
    const send = (extra: Record<string, unknown>) =>
      relay.transport(key.id, key.token).sendMail({
        from: 'Acme <hello@acme.test>',
        to: 'alice@example.net',
        subject: 'Hi',
        text: 'Hello',
        ...extra,
      });

    const cases: [string, Record<string, unknown>][] = [
      ['NUL in the text (nodemailer encodes it)', { text: 'a\u0000b' }],
      ['NUL in the subject (an encoded word)', { subject: 'Hi \u0000 there é' }],
      ['NUL in the HTML', { html: '<p>a\u0000b</p>', text: undefined }],
      [
        'NUL in a display name',
        { raw: 'From: hello@acme.test\r\nTo: =?utf-8?Q?Al=00ice?= <alice@example.net>\r\n\r\nx\r\n' },
      ],
      ['a raw NUL byte', { raw: 'From: hello@acme.test\r\nTo: alice@example.net\r\nSubject: x\r\n\r\na\u0000b\r\n' }],
      [
        'a control character in X-Tern-Kind',
        { raw: 'From: hello@acme.test\r\nTo: alice@example.net\r\nX-Tern-Kind: a\u0007b\r\n\r\nx\r\n' },
      ],
      [
        'a tab in X-Tern-Kind',
        { raw: 'From: hello@acme.test\r\nTo: alice@example.net\r\nX-Tern-Kind: a\tb\r\n\r\nx\r\n' },
      ],
    ];
    for (const [what, extra] of cases) {
      it(`refuses ${what}`, async () => {
        const before = await countEmails();
        const mail =
          'raw' in extra ? { envelope: { from: 'hello@acme.test', to: ['alice@example.net'] }, ...extra } : extra;
        const r = await refusal(send(mail));
        expect(r.response).to.match(/^554 5\.6\.0 Invalid message: /);
        expect(r.code).to.equal(554);
        expect(await countEmails()).to.equal(before);
      });
    }

    it('names the field that holds the NUL', async () => {
      const r = await refusal(send({ subject: 'a\u0000b é' }));
      expect(r.response).to.contain('message.subject must not contain a NUL character');
    });

    it('still takes CR, LF and tabs in the text', async () => {
      const info = await send({ text: 'line one\r\n\tline two' });
      expect(info.response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    });
  });
});

describe('SMTP MX: NUL in the envelope', () => {
  let api: TestApi;
  let mx: { port: number; close(): Promise<void> };

  before(async () => {
    api = await startApi();
    await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    mx = await startMx(api);
  });
  after(async () => {
    await mx.close();
    await api.close();
  });

  it('refuses a NUL in MAIL FROM or RCPT TO with a 5xx, never a 4xx', async () => {
    const { client } = await RawSmtp.open(mx.port);
    try {
      await client.cmd('EHLO client.test');
      expect((await client.cmd('MAIL FROM:<a\u0000b@example.net>')).code).to.be.within(500, 599);
      expect((await client.cmd('MAIL FROM:<a@example.net>')).code).to.equal(250);
      expect((await client.cmd('RCPT TO:<x\u0000@reply.acme.test>')).code).to.be.within(500, 599);
    } finally {
      await client.close();
    }
  });
});
