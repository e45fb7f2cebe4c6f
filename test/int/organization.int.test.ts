import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

describe('organization API', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql);
  });
  after(async () => api.close());

  const patch = (body: unknown, token = org.key.token) => api.request('PATCH', '/organization', { token, body });

  it('GET /organization returns the settings with their defaults', async () => {
    const res = await api.request('GET', '/organization', { token: org.key.token });
    expect(res.status).to.equal(200);
    const { created_at, updated_at, ...rest } = res.json;
    expect(created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(updated_at).to.match(/Z$/);
    expect(rest).to.deep.equal({
      object: 'organization',
      id: org.organization.id,
      name: org.organization.name,
      sending_paused: false,
      sending_paused_reason: null,
      tracking: { opens: false, clicks: false },
      rate_limit: { requests_per_second: 10, burst: 20 },
      daily_cap: null,
      alert_rules: [],
      retention: { content_days: 30, events_days: 90, request_log_days: 30 },
    });
  });

  it('PATCH changes every setting and returns the new state', async () => {
    const res = await patch({
      name: 'Acme Mail',
      tracking: { opens: true },
      rate_limit: { requests_per_second: 50 },
      daily_cap: 5000,
      alert_rules: [
        { metric: 'bounce', threshold: 4.5, min_volume: 500, window_days: 7, action: 'pause' },
        { metric: 'complaint', threshold: 0.1, action: 'notify' },
      ],
    });
    expect(res.status).to.equal(200);
    expect(res.json).to.include({ name: 'Acme Mail', daily_cap: 5000, sending_paused: false });
    expect(res.json.tracking).to.deep.equal({ opens: true, clicks: false });
    expect(res.json.rate_limit).to.deep.equal({ requests_per_second: 50, burst: 20 });
    expect(res.json.alert_rules).to.deep.equal([
      { metric: 'bounce', threshold: 4.5, min_volume: 500, window_days: 7, action: 'pause' },
      { metric: 'complaint', threshold: 0.1, min_volume: 0, window_days: 1, action: 'notify' },
    ]);
    const got = await api.request('GET', '/organization', { token: org.key.token });
    expect(got.json).to.deep.equal(res.json);
    const cleared = await patch({ daily_cap: null, alert_rules: [] });
    expect(cleared.json).to.include({ daily_cap: null, name: 'Acme Mail' });
    expect(cleared.json.alert_rules).to.deep.equal([]);
  });

  it('answers 422 naming the field for every bad value', async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: '' }, /body\.name/],
      [{ sending_paused: 'yes' }, /body\.sending_paused/],
      [{ sending_paused: true, sending_paused_reason: 'x'.repeat(501) }, /body\.sending_paused_reason/],
      [{ tracking: { opens: 1 } }, /body\.tracking\.opens/],
      [{ tracking: { views: true } }, /body\.tracking\.views/],
      [{ rate_limit: { requests_per_second: 0 } }, /body\.rate_limit\.requests_per_second/],
      [{ rate_limit: { burst: 1.5 } }, /body\.rate_limit\.burst/],
      [{ daily_cap: -1 }, /body\.daily_cap/],
      [{ alert_rules: {} }, /body\.alert_rules/],
      [{ alert_rules: [{ metric: 'open', threshold: 5, action: 'pause' }] }, /body\.alert_rules\.0\.metric/],
      [{ alert_rules: [{ metric: 'bounce', threshold: 0, action: 'pause' }] }, /body\.alert_rules\.0\.threshold/],
      [{ alert_rules: [{ metric: 'bounce', threshold: 101, action: 'pause' }] }, /body\.alert_rules\.0\.threshold/],
      [{ alert_rules: [{ metric: 'bounce', threshold: 5, action: 'pause', window_days: 91 }] }, /window_days/],
      [{ alert_rules: [{ metric: 'bounce', threshold: 5, action: 'pause', min_volume: -1 }] }, /min_volume/],
      [{ alert_rules: [{ metric: 'bounce', threshold: 5, action: 'email' }] }, /body\.alert_rules\.0\.action/],
      [{ alert_rules: [{ metric: 'bounce', action: 'pause' }] }, /body\.alert_rules\.0\.threshold is required/],
      [{ sending_paused_reason: 'why' }, /body\.sending_paused_reason/],
      [{ sending_paused: false, sending_paused_reason: 'why' }, /body\.sending_paused_reason/],
      [{ id: 'org_x' }, /body\.id is not a known field/],
    ];
    for (const [body, message] of cases) {
      // A fresh key per case: the cases alone would exhaust one key's default burst of 20.
      const admin = await org.mint({ permission: 'ADMIN' });
      const res = await patch(body, admin.token);
      expect(res.status, JSON.stringify(body)).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message, JSON.stringify(body)).to.match(message);
    }
    const unchanged = await api.request('GET', '/organization', { token: org.key.token });
    expect(unchanged.json.sending_paused).to.equal(false);
  });

  it('pauses with a reason, edits it, and clears it on resume; authorization sees each change at once', async () => {
    const paused = await patch({ sending_paused: true, sending_paused_reason: 'bounce spike' });
    expect(paused.json).to.include({ sending_paused: true, sending_paused_reason: 'bounce spike' });
    let auth = await api.deps.auth.authenticate(org.key.token);
    expect(auth.ok && auth.auth.org).to.include({ sendingPaused: true, sendingPausedReason: 'bounce spike' });

    const edited = await patch({ sending_paused_reason: 'under review' });
    expect(edited.json).to.include({ sending_paused: true, sending_paused_reason: 'under review' });
    const again = await patch({ sending_paused: true });
    expect(again.json.sending_paused_reason).to.equal('under review');

    const resumed = await patch({ sending_paused: false });
    expect(resumed.json).to.include({ sending_paused: false, sending_paused_reason: null });
    auth = await api.deps.auth.authenticate(org.key.token);
    expect(auth.ok && auth.auth.org).to.include({ sendingPaused: false, sendingPausedReason: null });
  });

  it('applies a new rate limit on the next request, in this and in another web process', async () => {
    const other = await startApi({ db: api.db, prefix: api.config.redisPrefix });
    try {
      const before = await other.request('GET', '/keys/me', { token: org.key.token });
      expect(before.headers.get('ratelimit-limit')).to.equal('20');
      // A fast refill: the probes below never run out of tokens, only the burst size shows.
      const res = await patch({ rate_limit: { requests_per_second: 1000, burst: 7 } });
      expect(res.json.rate_limit).to.deep.equal({ requests_per_second: 1000, burst: 7 });
      const here = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(here.headers.get('ratelimit-limit')).to.equal('7');
      // The other process learns of the change through Redis pub/sub.
      await waitFor('the other process to apply the new limit', async () => {
        const r = await other.request('GET', '/keys/me', { token: org.key.token });
        return r.headers.get('ratelimit-limit') === '7';
      });
    } finally {
      await other.close();
    }
  });

  it('refuses SEND, FULL and test keys, and restricted keys on PATCH', async () => {
    for (const k of [{ permission: 'SEND' as const }, { permission: 'FULL' as const, mode: 'test' as const }]) {
      const key = await org.mint(k);
      const res = await api.request('GET', '/organization', { token: key.token });
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden');
    }
    const scoped = await seedOrg(api.deps.sql, { domains: [{ name: 'scoped.test' }] });
    const restricted = await scoped.mint({ permission: 'ADMIN', domains: ['scoped.test'] });
    expect((await api.request('GET', '/organization', { token: restricted.token })).status).to.equal(200);
    const res = await patch({ name: 'x' }, restricted.token);
    expect(res.status).to.equal(403);
    expect(res.json.error.code).to.equal('forbidden_domain');
  });
});
