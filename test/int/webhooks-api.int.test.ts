import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

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
    await api.deps.sql`update organizations set rate_limit_per_second = 1000, rate_limit_burst = 1000`;
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
    expect(bad.status).to.equal(400);
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
    expect(badPatch.status).to.equal(422);
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
    expect(tooLong.status).to.equal(422);
    const test = await api.request('POST', `/webhooks/${wh.id}/test`, { token: org.key.token });
    expect(test.status).to.equal(409);
    const del = await api.request('DELETE', `/webhooks/${wh.id}`, { token: org.key.token });
    expect(del.json).to.deep.equal({ object: 'webhook', id: wh.id, deleted: true });
    expect((await api.request('GET', `/webhooks/${wh.id}`, { token: org.key.token })).status).to.equal(404);
    expect((await api.request('GET', `/webhooks/${wh.id}/deliveries`, { token: org.key.token })).status).to.equal(404);
  });

  it('is ADMIN and live only, and scoped to the organization', async () => {
    const full = await org.mint({ permission: 'FULL' });
    const res = await post({ url: 'https://a.example.com/' }, full.token);
    expect(res.status).to.equal(403);
    expect(res.json.error.code).to.equal('forbidden');
    const { json: wh } = await post({ url: 'https://c.example.com/' });
    const other = await seedOrg(api.deps.sql);
    const foreign = await api.request('GET', `/webhooks/${wh.id}`, { token: other.key.token });
    expect(foreign.status).to.equal(404);
    const retry = await api.request('POST', `/webhooks/${wh.id}/deliveries/dlv_nope/retry`, { token: org.key.token });
    expect(retry.status).to.equal(404);
  });
});
