// The audit log (DESIGN §15, issue 16 item 4): changes made with ADMIN and FULL keys and in the
// console are one row each (actor, action, target, ip, detail); SEND keys and reads write none;
// GET /audit-log pages and filters them like other lists; the console's Audit page shows them;
// no row ever holds a token, signing secret or password.
import { expect } from 'chai';
import { writeAuditEntry } from '../../shared/audit.js';
import type { Sql } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';
import { ConsoleClient } from '../helpers/console.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

interface Entry {
  id: string;
  actor: { type: string; id: string };
  action: string;
  target: { type: string; id: string };
  ip: string | null;
  created_at: string;
  detail: Record<string, unknown>;
}

describe('audit log', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  const secrets: string[] = [];

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'audit.test' }] });
    secrets.push(org.key.token, org.user.password);
  });

  after(async () => {
    await api.close();
  });

  async function entries(query = ''): Promise<Entry[]> {
    const res = await api.request('GET', `/audit-log${query}`, { token: org.key.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.object).to.equal('list');
    return res.json.data as Entry[];
  }

  it('records key minting, rotation and revocation by the ADMIN key, without the tokens', async () => {
    const minted = await api.request('POST', '/keys', {
      token: org.key.token,
      body: { name: 'ci', permission: 'SEND' },
    });
    expect(minted.status, minted.text).to.equal(201);
    secrets.push(minted.json.token);
    const rotated = await api.request('POST', `/keys/${minted.json.id}/rotate`, { token: org.key.token, body: {} });
    expect(rotated.status, rotated.text).to.equal(200);
    secrets.push(rotated.json.token);
    const revoked = await api.request('DELETE', `/keys/${minted.json.id}`, { token: org.key.token });
    expect(revoked.status, revoked.text).to.equal(200);

    const rows = await entries();
    expect(rows.slice(0, 3).map((r) => r.action)).to.deep.equal(['key.revoked', 'key.rotated', 'key.minted']);
    for (const r of rows.slice(0, 3)) {
      expect(r.id).to.match(/^aud_/);
      expect(r.actor).to.deep.equal({ type: 'key', id: org.key.id });
      expect(r.target).to.deep.equal({ type: 'key', id: minted.json.id });
      expect(r.ip).to.be.a('string');
    }
    // Field names only (ajv's defaults included), never their values.
    expect(rows[2]!.detail.fields).to.deep.equal(['mode', 'name', 'permission']);
  });

  it('records webhooks (secret rotation without the secret), settings, pause and resume', async () => {
    const hook = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: 'https://hooks.example.com/tern', events: ['email.sent'] },
    });
    secrets.push(hook.json.signing_secret);
    const rotated = await api.request('POST', `/webhooks/${hook.json.id}/rotate-secret`, {
      token: org.key.token,
      body: {},
    });
    secrets.push(rotated.json.signing_secret);
    await api.request('PATCH', '/organization', { token: org.key.token, body: { retention: { content_days: 7 } } });
    await api.request('PATCH', '/organization', { token: org.key.token, body: { sending_paused: true } });
    await api.request('PATCH', '/organization', { token: org.key.token, body: { sending_paused: false } });
    const rows = await entries('?limit=5');
    expect(rows.map((r) => r.action)).to.deep.equal([
      'organization.resumed',
      'organization.paused',
      'organization.updated',
      'webhook.secret_rotated',
      'webhook.created',
    ]);
    expect(rows[2]!.target).to.deep.equal({ type: 'organization', id: org.organization.id });
    expect(rows[2]!.detail.fields).to.deep.equal(['retention']);
    expect(rows[4]!.target).to.deep.equal({ type: 'webhook', id: hook.json.id });
  });

  it('records a suppression removed with a FULL key; a SEND key and reads write nothing', async () => {
    const full = await org.mint({ permission: 'FULL' });
    const send = await org.mint({ permission: 'SEND' });
    const supId = newId('sup');
    await api.deps.sql`insert into suppressions (id, org_id, email, reason)
      values (${supId}, ${org.organization.id}, 'gone@example.com', 'manual')`;
    const before = (await entries('?limit=100')).length;
    await api.request('GET', '/keys', { token: org.key.token });
    await api.request('POST', '/suppressions', { token: send.token, body: { email: 'x@example.com' } });
    const del = await api.request('DELETE', `/suppressions/${supId}`, { token: full.token });
    expect(del.status, del.text).to.equal(200);
    const rows = await entries('?limit=100');
    expect(rows.length).to.equal(before + 1);
    expect(rows[0]).to.deep.include({ action: 'suppression.removed', actor: { type: 'key', id: full.id } });
    expect(rows[0]!.target).to.deep.equal({ type: 'suppression', id: supId });
  });

  it('pages with after/before and filters by action and actor', async () => {
    const all = await entries('?limit=100');
    const first = await api.request('GET', '/audit-log?limit=2', { token: org.key.token });
    expect(first.json.has_more).to.equal(true);
    expect(first.json.data.map((r: Entry) => r.id)).to.deep.equal(all.slice(0, 2).map((r) => r.id));
    const second = await api.request('GET', `/audit-log?limit=2&after=${first.json.data[1].id}`, {
      token: org.key.token,
    });
    expect(second.json.data.map((r: Entry) => r.id)).to.deep.equal(all.slice(2, 4).map((r) => r.id));
    const back = await api.request('GET', `/audit-log?limit=2&before=${all[2]!.id}`, { token: org.key.token });
    expect(back.json.data.map((r: Entry) => r.id)).to.deep.equal(all.slice(0, 2).map((r) => r.id));
    const minted = await entries('?action=key.minted');
    expect(minted.map((r) => r.action)).to.deep.equal(['key.minted']);
    const byActor = await entries(`?actor=${org.key.id}`);
    expect(byActor.length).to.be.greaterThan(0);
    expect(byActor.every((r) => r.actor.id === org.key.id)).to.equal(true);
    expectError(
      await api.request('GET', '/audit-log?action=DROP%20TABLE', { token: org.key.token }),
      422,
      'validation_error',
    );
  });

  it('is for ADMIN keys only', async () => {
    const full = await org.mint({ permission: 'FULL' });
    expectError(await api.request('GET', '/audit-log', { token: full.token }), 403, 'forbidden');
  });

  it('records console actions with the user as actor, and shows them on the Audit page', async () => {
    const admin = new ConsoleClient(api.url);
    await admin.login(org.user.email, org.user.password);
    await admin.get('/console/keys');
    const minted = await admin.post('/console/keys', { name: 'from console', permission: 'SEND', mode: 'live' });
    expect(minted.status, minted.text).to.equal(201);
    const token = /data-token>([^<]+)</.exec(minted.text)?.[1];
    expect(token).to.be.a('string');
    secrets.push(token!);
    await admin.get('/console/users');
    const added = await admin.post('/console/users', { email: 'new-admin@example.test', role: 'admin' });
    expect(added.status, added.text).to.equal(201);
    const password = /data-password>([^<]+)</.exec(added.text)?.[1];
    expect(password).to.be.a('string');
    secrets.push(password!);

    const rows = await entries('?limit=2');
    expect(rows.map((r) => r.action)).to.deep.equal(['user.added', 'key.minted']);
    expect(rows[1]!.actor).to.deep.equal({ type: 'user', id: org.user.id });
    expect(rows[1]!.detail.via).to.equal('console');

    const page = await admin.get('/console/audit');
    expect(page.status, page.text).to.equal(200);
    expect(page.text).to.contain(`data-audit="${rows[0]!.id}"`);
    expect(page.text).to.contain('key.minted');
    const filtered = await admin.get('/console/audit?action=user.added');
    expect(filtered.text).to.contain(`data-audit="${rows[0]!.id}"`);
    expect(filtered.text).not.to.contain(`data-audit="${rows[1]!.id}"`);
  });

  it('names one act alike from the API and the console, and shows who did it by name beside the id', async () => {
    const viaApi = await api.request('POST', '/domains', { token: org.key.token, body: { name: 'api-made.test' } });
    expect(viaApi.status, viaApi.text).to.be.oneOf([200, 201]);
    const admin = new ConsoleClient(api.url);
    await admin.login(org.user.email, org.user.password);
    await admin.get('/console/domains');
    const viaConsole = await admin.post('/console/domains', { name: 'console-made.test' });
    expect(viaConsole.status, viaConsole.text).to.equal(303);
    await admin.get('/console/settings');
    expect((await admin.post('/console/settings/pause', { reason: 'audit check' })).status).to.equal(303);
    expect((await admin.post('/console/settings/resume')).status).to.equal(303);

    const rows = await entries('?limit=4');
    expect(rows.map((r) => [r.action, r.actor.type])).to.deep.equal([
      ['organization.resumed', 'user'],
      ['organization.paused', 'user'],
      ['domain.created', 'user'],
      ['domain.created', 'key'],
    ]);
    const page = await admin.get('/console/audit?action=domain.created');
    const actor = (id: string) => new RegExp(`data-actor="${id}"[^]*?data-actor-name>([^<]+)<`).exec(page.text)?.[1];
    expect(actor(org.user.id)).to.equal(org.user.email);
    const [key] = await api.deps.sql<{ name: string }[]>`select name from api_keys where id = ${org.key.id}`;
    expect(actor(org.key.id)).to.equal(key!.name);
  });

  it('never stores a token, signing secret or password', async () => {
    const rows = await api.deps.sql<{ text: string }[]>`select audit_log::text as text from audit_log`;
    expect(rows.length).to.be.greaterThan(8);
    const all = rows.map((r) => r.text).join('\n');
    expect(secrets.length).to.be.greaterThan(5);
    for (const s of secrets) expect(all, 'a secret in the audit log').not.to.contain(s);
    expect(all).not.to.match(/tern_(live|test)_|whsec_/);
  });

  it('a write that meets a Postgres outage is made once Postgres answers, once, without holding the caller', async () => {
    const real = api.deps.sql;
    let failures = 3;
    const flaky = Object.assign(
      (strings: TemplateStringsArray, ...args: unknown[]) =>
        failures-- > 0
          ? Promise.reject(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
          : (real as unknown as (s: TemplateStringsArray, ...a: unknown[]) => Promise<unknown>)(strings, ...args),
      { json: real.json.bind(real) },
    ) as unknown as Sql;
    const target = newId('key');
    const failed: unknown[] = [];
    await writeAuditEntry(
      flaky,
      {
        orgId: org.organization.id,
        actor: { type: 'key', id: org.key.id },
        action: 'key.revoked',
        target: { type: 'key', id: target },
        ip: '127.0.0.1',
        detail: {},
      },
      (err) => failed.push(err),
    );
    const count = async () =>
      (await real<{ n: number }[]>`select count(*)::int as n from audit_log where target_id = ${target}`)[0]!.n;
    // The caller was answered after two tries; the next ones run in the background.
    expect(failures).to.equal(1);
    await waitFor('the audit row', async () => (await count()) === 1, 15_000);
    expect(failed).to.deep.equal([]);
  });
});
