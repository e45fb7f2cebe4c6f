import { expect } from 'chai';
import { refusal, startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

const message = (extra: Record<string, unknown> = {}) => ({
  from: 'Acme <hello@acme.test>',
  to: 'alice@example.net',
  subject: 'Hi',
  text: 'Hello there',
  ...extra,
});

describe('SMTP relay: AUTH', () => {
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let secureRelay: TestRelay;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    relay = await startRelay(api);
    secureRelay = await startRelay(api, {}, { secure: true });
  });
  after(async () => {
    await secureRelay.close();
    await relay.close();
    await api.close();
  });

  const storedMode = async (id: string) =>
    (await api.deps.sql<{ mode: string; key_id: string }[]>`select mode, key_id from emails where id = ${id}`)[0];

  for (const [permission, mode] of [
    ['SEND', 'live'],
    ['FULL', 'live'],
    ['SEND', 'test'],
    ['FULL', 'test'],
  ] as const) {
    it(`accepts a ${permission} ${mode} key (AUTH PLAIN after STARTTLS) and queues the message`, async () => {
      const k = await org.mint({ permission, mode });
      const info = await relay.transport(k.id, k.token).sendMail(message());
      const m = /^250 2\.0\.0 Ok: queued as (em_[0-9A-Z]{26})$/.exec(info.response ?? '');
      expect(m, info.response).to.not.equal(null);
      expect(await storedMode(m![1]!)).to.deep.equal({ mode, key_id: k.id });
    });
  }

  it('accepts the ADMIN key, and AUTH LOGIN', async () => {
    const info = await relay.transport(org.key.id, org.key.token, { authMethod: 'LOGIN' }).sendMail(message());
    expect(info.response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    const id = (info.response ?? '').split(' ').pop()!;
    expect(await storedMode(id)).to.deep.equal({ mode: 'live', key_id: org.key.id });
  });

  it('refuses a wrong token with 535 5.7.8', async () => {
    const k = await org.mint({ permission: 'SEND' });
    const r = await refusal(relay.transport(k.id, `${k.token}x`).sendMail(message()));
    expect(r.response).to.match(/^535 5\.7\.8 /);
  });

  it('refuses a malformed token and an empty password with 535 5.7.8', async () => {
    const k = await org.mint({ permission: 'SEND' });
    for (const pass of ['not-a-key', 'tern_live_']) {
      const r = await refusal(relay.transport(k.id, pass).sendMail(message()));
      expect(r.response).to.match(/^535 5\.7\.8 /);
    }
  });

  it('refuses a username that is not the key id of the token (535 5.7.8)', async () => {
    const a = await org.mint({ permission: 'SEND' });
    const b = await org.mint({ permission: 'SEND' });
    const r = await refusal(relay.transport(b.id, a.token).sendMail(message()));
    expect(r.response).to.match(/^535 5\.7\.8 /);
  });

  it('refuses a revoked key (revoked through the API, seen by the relay at once)', async () => {
    const k = await org.mint({ permission: 'SEND' });
    expect((await relay.transport(k.id, k.token).sendMail(message())).response).to.match(/^250 /);
    const res = await api.request('DELETE', `/keys/${k.id}`, { token: org.key.token });
    expect(res.status).to.equal(200);
    const r = await refusal(relay.transport(k.id, k.token).sendMail(message()));
    expect(r.response).to.match(/^535 5\.7\.8 /);
  });

  it('refuses AUTH before STARTTLS', async () => {
    const k = await org.mint({ permission: 'SEND' });
    // AUTH is not offered in clear, so nodemailer never sends the key: the message meets 530.
    const r = await refusal(relay.transport(k.id, k.token, { ignoreTLS: true, requireTLS: false }).sendMail(message()));
    expect(r.response).to.match(/^530 5\.7\.0 /);
    // A client that sends AUTH all the same is answered 538.
    const forced = await refusal(
      relay.transport(k.id, k.token, { ignoreTLS: true, requireTLS: false, forceAuth: true }).sendMail(message()),
    );
    expect(forced.response).to.match(/^538 .*STARTTLS/);
  });

  it('refuses MAIL FROM without AUTH (530 5.7.0)', async () => {
    const r = await refusal(relay.transport('', '', { auth: undefined }).sendMail(message()));
    expect(r.response).to.match(/^530 5\.7\.0 /);
  });

  it('allows AUTH without TLS only with RELAY_ALLOW_INSECURE_AUTH', async () => {
    const insecure = await startRelay(api, { relayAllowInsecureAuth: true });
    try {
      const k = await org.mint({ permission: 'SEND' });
      const info = await insecure.transport(k.id, k.token, { ignoreTLS: true, requireTLS: false }).sendMail(message());
      expect(info.response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    } finally {
      await insecure.close();
    }
  });

  it('serves implicit TLS (RELAY_TLS_PORT) with the same AUTH', async () => {
    const k = await org.mint({ permission: 'SEND' });
    const info = await secureRelay.transport(k.id, k.token, { secure: true, requireTLS: false }).sendMail(message());
    expect(info.response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
  });
});
