import { expect } from 'chai';
import { rawSession, refusal, startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { setRateLimit } from '../helpers/unthrottle.js';

const message = (extra: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme.test>',
  to: 'alice@example.net',
  subject: 'Hi',
  text: 'Hello there',
  ...extra,
});

/** A raw message (CRLF) with the given header lines and a short body. */
const rawMessage = (headers: string[]) => Buffer.from(`${headers.join('\r\n')}\r\n\r\nBody\r\n`);

describe('SMTP relay: key rules and refusal codes', () => {
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let key: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, {
      domains: [{ name: 'acme.test' }, { name: 'beta.test' }, { name: 'pending.test', verified: false }],
    });
    relay = await startRelay(api, { relayMaxBytes: 64 * 1024 });
    key = await org.mint({ permission: 'SEND' });
  });
  after(async () => {
    await relay.close();
    await api.close();
  });

  const countEmails = async () => Number((await api.deps.sql<{ n: string }[]>`select count(*) as n from emails`)[0]!.n);

  describe('domain restriction', () => {
    let restricted: { id: string; token: string };
    before(async () => {
      restricted = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    });

    it('accepts its own domain on the envelope and the From header', async () => {
      const info = await relay.transport(restricted.id, restricted.token).sendMail(message());
      expect(info.response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    });

    it('refuses another domain at MAIL FROM with 550 5.7.1', async () => {
      const r = await refusal(
        relay.transport(restricted.id, restricted.token).sendMail(message({ from: 'hello@beta.test' })),
      );
      expect(r.command).to.equal('MAIL FROM');
      expect(r.response).to.match(/^550 5\.7\.1 .*beta\.test/);
    });

    it('refuses a From header on another domain at DATA with 550 5.7.1, even when the envelope is its own', async () => {
      const before = await countEmails();
      const r = await refusal(
        relay.transport(restricted.id, restricted.token).sendMail({
          envelope: { from: 'hello@acme.test', to: ['alice@example.net'] },
          raw: rawMessage(['From: Beta <hello@beta.test>', 'To: alice@example.net', 'Subject: Hi']),
        }),
      );
      expect(r.command).to.equal('DATA');
      expect(r.response).to.match(/^550 5\.7\.1 .*beta\.test/);
      expect(await countEmails()).to.equal(before);
    });

    it('refuses an unrestricted key a sender domain the organization has not verified, or does not own', async () => {
      const why = {
        'hello@pending.test': 'MAIL FROM: domain pending.test is not verified',
        'hello@gmail.example': 'MAIL FROM: domain gmail.example is not a domain of this organization',
      };
      for (const [from, text] of Object.entries(why)) {
        const r = await refusal(relay.transport(key.id, key.token).sendMail(message({ from })));
        expect(r.response, from).to.equal(`550 5.7.1 ${text}`);
      }
    });

    it('refuses an unverified From header behind a verified envelope (550 5.7.1 at DATA)', async () => {
      const r = await refusal(
        relay.transport(key.id, key.token).sendMail({
          envelope: { from: 'hello@acme.test', to: ['alice@example.net'] },
          raw: rawMessage(['From: hello@pending.test', 'To: alice@example.net', 'Subject: Hi']),
        }),
      );
      expect(r.command).to.equal('DATA');
      expect(r.response).to.equal('550 5.7.1 From header: domain pending.test is not verified');
    });
  });

  it('answers 451 4.7.1 while sending is paused, and accepts again after', async () => {
    const orgId = org.organization.id;
    await api.deps
      .sql`update organizations set sending_paused = true, sending_paused_reason = 'bounce rate' where id = ${orgId}`;
    await api.deps.auth.invalidateOrg(orgId);
    try {
      const r = await refusal(relay.transport(key.id, key.token).sendMail(message()));
      expect(r.response).to.match(/^451 4\.7\.1 .*paused.*bounce rate/);
    } finally {
      await api.deps.sql`update organizations set sending_paused = false where id = ${orgId}`;
      await api.deps.auth.invalidateOrg(orgId);
    }
    expect((await relay.transport(key.id, key.token).sendMail(message())).response).to.match(/^250 /);
  });

  it('spends one rate-limit token per message: over the burst is 451 4.7.1', async () => {
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'slow.test' }] });
    await setRateLimit(api, other.organization.id, 1, 3);
    const k = await other.mint({ permission: 'SEND' });
    // One session, several messages: the bucket counts messages, not connections. Sent until the
    // first refusal: the bucket refills 1 token a second, so a slow machine gets a few more in,
    // never fewer than the burst, and never more than the burst plus one per second elapsed.
    const t = relay.transport(k.id, k.token, { pool: true, maxConnections: 1 });
    const results: string[] = [];
    const started = Date.now();
    while (results.length < 30 && !results.some((r) => !r.startsWith('250 '))) {
      try {
        results.push((await t.sendMail(message({ from: 'hi@slow.test' }))).response ?? '');
      } catch (err) {
        results.push((err as { response: string }).response);
      }
    }
    const elapsed = Date.now() - started;
    t.close();
    const accepted = results.length - 1;
    expect(results.at(-1), results.join(' | ')).to.match(/^451 4\.7\.1 .*[Rr]ate limit/);
    expect(results.slice(0, -1).every((r) => r.startsWith('250 '))).to.equal(true, results.join(' | '));
    expect(accepted)
      .to.be.at.least(3)
      .and.at.most(3 + Math.ceil(elapsed / 1000));
  });

  it('refuses an oversized message with 552 5.3.4 and stores nothing', async () => {
    const before = await countEmails();
    const r = await refusal(relay.transport(key.id, key.token).sendMail(message({ text: 'x'.repeat(100 * 1024) })));
    expect(r.response).to.match(/^552 5\.3\.4 /);
    expect(await countEmails()).to.equal(before);
  });

  it('advertises the size limit and refuses a declared SIZE over it at MAIL FROM (552)', async () => {
    const session = await rawSession(relay.port, key.id, key.token);
    try {
      const ehlo = await session.command('EHLO client.test');
      expect(ehlo).to.match(/^250[- ]SIZE 65536$/m);
      expect(await session.command(`MAIL FROM:<hello@acme.test> SIZE=${1024 * 1024}`)).to.match(/^552 /);
    } finally {
      await session.close();
    }
  });

  describe('invalid messages (554 5.6.0)', () => {
    const cases: [string, string[]][] = [
      ['no From header', ['To: alice@example.net', 'Subject: Hi']],
      ['two From addresses', ['From: a@acme.test, b@acme.test', 'To: alice@example.net']],
      ['a malformed header line', ['From: hello@acme.test', 'This line has no colon', 'To: alice@example.net']],
      ['a message starting with a folded line', [' folded', 'From: hello@acme.test']],
      ['a bad X-Tern-Tags item', ['From: hello@acme.test', 'X-Tern-Tags: plan=pro, bad tag=x']],
      ['two X-Tern-Kind fields', ['From: hello@acme.test', 'X-Tern-Kind: a', 'X-Tern-Kind: b']],
    ];
    for (const [what, headers] of cases) {
      it(`refuses ${what}`, async () => {
        const before = await countEmails();
        const r = await refusal(
          relay.transport(key.id, key.token).sendMail({
            envelope: { from: 'hello@acme.test', to: ['alice@example.net'] },
            raw: rawMessage(headers),
          }),
        );
        expect(r.response).to.match(/^554 5\.6\.0 Invalid message: /);
        expect(await countEmails()).to.equal(before);
      });
    }
  });

  it('refuses a malformed recipient address at RCPT TO (553 5.1.3)', async () => {
    const session = await rawSession(relay.port, key.id, key.token);
    try {
      expect(await session.command('MAIL FROM:<hello@acme.test>')).to.match(/^250 /);
      expect(await session.command('RCPT TO:<"unterminated@example.net>')).to.match(/^5\d\d /);
      expect(await session.command('RCPT TO:<a@[127.0.0.1]>')).to.match(/^553 5\.1\.3 /);
      expect(await session.command('RCPT TO:<ok@example.net>')).to.match(/^250 /);
    } finally {
      await session.close();
    }
  });
});
