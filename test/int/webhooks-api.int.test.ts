import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const ALL = [
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
];

describe('webhooks API (production URL rules)', () => {
  let api: TestApi;
  let org: SeededOrg;
  const post = (body: unknown, token = org.key.token) => api.request('POST', '/webhooks', { token, body });

  before(async () => {
    api = await startApi({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
  });
  after(async () => api.close());

  it('creates an endpoint with every event type by default and shows the secret once', async () => {
    const res = await post({ url: 'https://hooks.example.com/tern', description: 'prod' });
    expect(res.status).to.equal(201);
    expect(res.json).to.include({
      object: 'webhook',
      url: 'https://hooks.example.com/tern',
      status: 'enabled',
      description: 'prod',
    });
    expect(res.json.id).to.match(/^wh_/);
    expect(res.json.events).to.deep.equal(ALL);
    expect(res.json.signing_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(res.json.signing_secret.slice(6), 'base64')).to.have.length(32);
    expect(res.json.created_at).to.match(/\.\d{3}Z$/);
    const got = await api.request('GET', `/webhooks/${res.json.id}`, { token: org.key.token });
    expect(got.status).to.equal(200);
    expect(got.json).not.to.have.property('signing_secret');
    const list = await api.request('GET', '/webhooks', { token: org.key.token });
    expect(list.json.object).to.equal('list');
    expect(list.text).not.to.contain(res.json.signing_secret);
  });

  it('answers 422 naming the field for bad URLs and event filters', async () => {
    const cases: [unknown, string][] = [
      [{ url: 'http://hooks.example.com/' }, 'body.url'],
      [{ url: 'https://user:pw@hooks.example.com/' }, 'body.url'],
      [{ url: 'not a url' }, 'body.url'],
      [{ url: `https://example.com/${'a'.repeat(2100)}` }, 'body.url'],
      [{ url: 'https://127.0.0.1/' }, 'body.url'],
      [{ url: 'https://[::ffff:169.254.169.254]/' }, 'body.url'],
      [{ url: 'https://example.com/', events: ['email.nope'] }, 'body.events'],
      [{ url: 'https://example.com/', events: [] }, 'body.events'],
      [{ events: ['email.sent'] }, 'url'],
      [{ url: 'https://example.com/', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.contain(field);
    }
    const bad = await api.request('POST', '/webhooks', {
      token: org.key.token,
      raw: '{',
      headers: { 'content-type': 'application/json' },
    });
    expectError(bad, 400, 'invalid_json');
  });

  it('refuses every spelling of a loopback or private host at creation and on PATCH', async () => {
    const { json: wh } = await post({ url: 'https://a.example.com/' });
    for (const host of [
      'localhost',
      'localhost.',
      'LOCALHOST',
      'LocalHost.',
      'localhost..',
      'app.localhost.',
      '127.1',
      '127.0.0.1.',
      '0x7f000001',
      '0x7f.1',
      '2130706433',
      '017700000001',
      '[::1]',
      '[0:0:0:0:0:0:0:1]',
      '[::ffff:127.0.0.1]',
      '0.0.0.0',
      '0',
      '10.0.0.1.',
      '169.254.169.254',
    ]) {
      const url = `https://${host}/hook`;
      for (const res of [
        await post({ url }),
        await api.request('PATCH', `/webhooks/${wh.id}`, { token: org.key.token, body: { url } }),
      ]) {
        expect(res.status, url).to.equal(422);
        expect(res.json.error.message, url).to.equal('body.url must be a public address');
      }
    }
    // A public name with the root's trailing dot is a public name.
    expect((await post({ url: 'https://hooks.example.com./tern' })).status).to.equal(201);
  });

  it('updates, disables, rotates and deletes', async () => {
    const { json: wh } = await post({ url: 'https://a.example.com/' });
    const patch = await api.request('PATCH', `/webhooks/${wh.id}`, {
      token: org.key.token,
      body: { url: 'https://b.example.com/x', events: ['email.bounced'], status: 'disabled', description: null },
    });
    expect(patch.status).to.equal(200);
    expect(patch.json).to.include({ url: 'https://b.example.com/x', status: 'disabled', description: null });
    expect(patch.json.events).to.deep.equal(['email.bounced']);
    const badPatch = await api.request('PATCH', `/webhooks/${wh.id}`, {
      token: org.key.token,
      body: { status: 'paused' },
    });
    expectError(badPatch, 422, 'validation_error');
    expect(badPatch.json.error.message).to.contain('body.status');
    const rot = await api.request('POST', `/webhooks/${wh.id}/rotate-secret`, {
      token: org.key.token,
      body: { expires_in: 60 },
    });
    expect(rot.status).to.equal(200);
    expect(rot.json.signing_secret).to.not.equal(wh.signing_secret);
    expect(rot.json.previous_secret_expires_at).to.be.a('string');
    const tooLong = await api.request('POST', `/webhooks/${wh.id}/rotate-secret`, {
      token: org.key.token,
      body: { expires_in: 8 * 86400 },
    });
    expectError(tooLong, 422, 'validation_error');
    const test = await api.request('POST', `/webhooks/${wh.id}/test`, { token: org.key.token });
    expectError(test, 409, 'invalid_state');
    const del = await api.request('DELETE', `/webhooks/${wh.id}`, { token: org.key.token });
    expect(del.json).to.deep.equal({ object: 'webhook', id: wh.id, deleted: true });
    expectError(await api.request('GET', `/webhooks/${wh.id}`, { token: org.key.token }), 404, 'not_found');
    expectError(await api.request('GET', `/webhooks/${wh.id}/deliveries`, { token: org.key.token }), 404, 'not_found');
  });

  it('is ADMIN and live only, and scoped to the organization', async () => {
    const full = await org.mint({ permission: 'FULL' });
    const res = await post({ url: 'https://a.example.com/' }, full.token);
    expect(res.status).to.equal(403);
    expect(res.json.error.code).to.equal('forbidden');
    const { json: wh } = await post({ url: 'https://c.example.com/' });
    const other = await seedOrg(api.deps.sql);
    const foreign = await api.request('GET', `/webhooks/${wh.id}`, { token: other.key.token });
    expectError(foreign, 404, 'not_found');
    const retry = await api.request('POST', `/webhooks/${wh.id}/deliveries/dlv_nope/retry`, { token: org.key.token });
    expectError(retry, 404, 'not_found');
  });
});
