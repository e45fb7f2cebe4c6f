// The request log (GET /logs, DESIGN §21): every API request of an organization after its answer
// went out, with method, path, status, key, IP, user agent and duration; bodies with no token,
// password, signing secret, DKIM key or attachment content in any stored row; filters; the
// caller's mode and organization only; retention.
import { expect } from 'chai';
import { purgeExpired } from '../../workers/retention.js';
import { ConsoleClient } from '../helpers/console.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

type Log = Record<string, unknown> & { id: string; path: string; status: number };

describe('request log', () => {
  let api: TestApi;
  let org: SeededOrg;
  let other: SeededOrg;
  let admin: string;
  const ATTACHMENT = 'attachment-bytes-that-must-not-be-logged';

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
  });
  after(async () => api.close());

  const logs = async (token: string, query = '') => {
    const res = await api.request('GET', `/logs${query}`, { token });
    expect(res.status, res.text).to.equal(200);
    return res.json.data as Log[];
  };
  const logged = (token: string, n: number, query = '') =>
    waitFor(`${n} request log lines`, async () => {
      const rows = await logs(token, query);
      return rows.length >= n ? rows : null;
    });

  it('logs each request with its answer, and keeps no secret in any stored row', async () => {
    const sent = await api.request('POST', '/emails', {
      token: admin,
      headers: { 'user-agent': 'sdk-test/1' },
      body: {
        from: 'hello@acme.test',
        to: 'ann@example.com',
        subject: 'Hi',
        text: 'Hi',
        attachments: [{ filename: 'a.txt', content: Buffer.from(ATTACHMENT).toString('base64') }],
      },
    });
    expect(sent.status, sent.text).to.equal(200);
    const key = await api.request('POST', '/keys', { token: admin, body: { name: 'CI', permission: 'SEND' } });
    const webhook = await api.request('POST', '/webhooks', {
      token: admin,
      body: { url: 'https://hooks.example.com/x' },
    });
    const domain = await api.request('POST', '/domains', { token: admin, body: { name: 'logged.test' } });
    expect(domain.status, domain.text).to.equal(201);
    const bad = await api.request('POST', '/emails', { token: admin, body: { from: 'x@unknown.test', to: 'a@b.c' } });
    expect(bad.status).to.equal(422);

    const rows = await logged(admin, 5);
    const first = rows.find((r) => r.path === '/api/v1/emails' && r.status === 200)!;
    expect(first).to.deep.include({
      object: 'log',
      method: 'POST',
      route: '/api/v1/emails',
      key_id: org.key.id,
      user_agent: 'sdk-test/1',
    });
    expect(first.duration_ms).to.be.a('number');
    expect(first.ip).to.be.a('string');
    expect(first).to.not.have.property('request_body');
    const one = await api.request('GET', `/logs/${first.id}`, { token: admin });
    expect(one.json.request_body.attachments[0]).to.deep.equal({ filename: 'a.txt', content: '[redacted]' });
    expect(one.json.response_body).to.deep.equal(sent.json);
    const refused = rows.find((r) => r.status === 422)!;
    const detail = (await api.request('GET', `/logs/${refused.id}`, { token: admin })).json;
    expect(detail.response_body).to.deep.equal(bad.json);

    const secrets = [
      admin,
      key.json.token as string,
      webhook.json.signing_secret as string,
      ATTACHMENT,
      Buffer.from(ATTACHMENT).toString('base64'),
      ...(domain.json.records as { value: string }[])
        .filter((r) => /p=[A-Za-z0-9+/]{40,}/.test(r.value))
        .map((r) => r.value),
    ];
    expect(secrets.length).to.be.greaterThan(5);
    await waitFor('every line stored', async () => {
      const [n] = await api.deps.sql`select count(*)::int as n from request_logs where org_id = ${org.organization.id}`;
      return n!.n >= 5;
    });
    const stored = await api.deps.sql`select to_jsonb(l)::text as row from request_logs l`;
    for (const { row } of stored) for (const secret of secrets) expect(row).to.not.contain(secret);
  });

  it('filters by status, path, key and time', async () => {
    const send = await org.mint({ permission: 'SEND' });
    await api.request('GET', '/emails', { token: send.token });
    const mine = await logged(admin, 1, `?key_id=${send.id}`);
    expect(mine.map((r) => [r.path, r.key_id])).to.deep.equal([['/api/v1/emails', send.id]]);
    expect((await logs(admin, '?status=422')).every((r) => r.status === 422)).to.equal(true);
    expect((await logs(admin, '?status=422')).length).to.be.greaterThan(0);
    expect((await logs(admin, '?path=/api/v1/keys')).map((r) => r.path)).to.deep.equal(['/api/v1/keys']);
    expect(
      await logs(admin, `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`),
    ).to.deep.equal([]);
    expectError(await api.request('GET', '/logs?status=99', { token: admin }), 422, 'validation_error');
  });

  it("shows a caller its own organization's and mode's lines only, to FULL keys and above", async () => {
    const [line] = await logs(admin);
    expectError(await api.request('GET', `/logs/${line!.id}`, { token: other.key.token }), 404, 'not_found');
    expect(await logs(other.key.token)).to.deep.equal([]);
    const test = await org.mint({ permission: 'FULL', mode: 'test' });
    expectError(await api.request('GET', `/logs/${line!.id}`, { token: test.token }), 404, 'not_found');
    const send = await org.mint({ permission: 'SEND' });
    expectError(await api.request('GET', '/logs', { token: send.token }), 403, 'forbidden');
    const restricted = await org.mint({ permission: 'FULL', domains: ['acme.test'] });
    expectError(await api.request('GET', '/logs', { token: restricted.token }), 403, 'forbidden_domain');
  });

  it('shows the log in the console, and links an email to the request that made it', async () => {
    const sent = await api.request('POST', '/emails', {
      token: admin,
      body: { from: 'hello@acme.test', to: 'console@example.com', subject: 'Console', text: 'Hi' },
    });
    const id = sent.json.id as string;
    const [line] = await waitFor('the send in the log', async () => {
      const rows = await api.deps.sql`select id from request_logs where response_body ->> 'id' = ${id}`;
      return rows.length ? rows : null;
    });
    const browser = new ConsoleClient(api.url);
    await browser.login(org.user.email, org.user.password);
    const list = await browser.get('/console/logs?path=/api/v1/emails');
    expect(list.status).to.equal(200);
    expect(list.text).to.contain(`data-log="${line!.id}"`);
    const detail = await browser.get(`/console/logs/${line!.id}`);
    expect(detail.status).to.equal(200);
    expect(detail.text).to.contain('console@example.com').and.to.contain(id);
    const email = await browser.get(`/console/emails/${id}`);
    expect(email.text).to.contain(`href="/console/logs?email=${id}"`);
    const made = await browser.get(`/console/logs?email=${id}`);
    expect(made.text).to.contain(`data-log="${line!.id}"`);
    const outsider = new ConsoleClient(api.url);
    await outsider.login(other.user.email, other.user.password);
    expect((await outsider.get(`/console/logs/${line!.id}`)).status).to.equal(404);
  });

  it('is kept retention.request_log_days (default 30)', async () => {
    const got = await api.request('GET', '/organization', { token: admin });
    expect(got.json.retention.request_log_days).to.equal(30);
    const [aged] = await api.deps.sql`
      update request_logs set created_at = now() - interval '31 days'
      where id = (select id from request_logs where org_id = ${org.organization.id} order by id limit 1)
      returning id`;
    const wdeps = workerDepsFor(api);
    try {
      const counts = await purgeExpired(wdeps, org.organization.id);
      expect(counts.requestLogs).to.equal(1);
    } finally {
      await wdeps.close();
    }
    expect(await api.deps.sql`select id from request_logs where id = ${aged!.id}`).to.have.length(0);
    expect(await logs(admin)).to.not.have.length(0);
  });
});
