import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { expect } from 'chai';
import { restoreDemoDomain } from '../../shared/db/domains.js';
import { secretBox } from '../../shared/secrets.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const MX_HOST = 'mx.tern-install.test';

interface ApiRecord {
  record: string;
  name: string;
  type: string;
  value: string;
  priority?: number;
  status: string;
  reason?: string;
}

function byKind(records: ApiRecord[]): Record<string, ApiRecord> {
  return Object.fromEntries(records.map((r) => [r.record, r]));
}

/** Publishes the records the API asked for, exactly as given. */
function publish(dns: TestDns, records: ApiRecord[]): void {
  const txt = new Map<string, string[]>();
  for (const r of records) {
    if (r.type === 'TXT') txt.set(r.name, [...(txt.get(r.name) ?? []), r.value]);
    else dns.mx(r.name, [{ exchange: r.value, priority: r.priority! }]);
  }
  for (const [name, values] of txt) dns.txt(name, values);
}

describe('domains API', () => {
  let api: TestApi;
  let dns: TestDns;
  let org: SeededOrg;

  before(async () => {
    dns = await startDns();
    api = await startApi({ env: { DNS_SERVERS: dns.server, MX_HOST } });
    org = await seedOrg(api.deps.sql);
    // Many quick requests with one key: keep the default rate limit out of these tests.
    await unthrottle(api, org.organization.id);
  });
  after(async () => {
    await api.close();
    await dns.close();
  });

  const create = (name: unknown, token = org.key.token) => api.request('POST', '/domains', { token, body: { name } });

  describe('POST /domains', () => {
    it('creates a pending domain with its DKIM, SPF, MX and DMARC records', async () => {
      const res = await create('Mail.Acme.test');
      expect(res.status).to.equal(201);
      const d = res.json;
      expect(d).to.include({ object: 'domain', name: 'mail.acme.test', status: 'pending' });
      expect(d.id).to.match(/^dom_[0-9A-Z]{26}$/);
      expect(d.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(d).to.include({ open_tracking: null, click_tracking: null, verified_at: null });
      expect(d.records.map((r: ApiRecord) => r.record)).to.deep.equal([
        'DKIM',
        'SPF',
        'MX_BOUNCE',
        'MX_REPLY',
        'DMARC',
      ]);
      const r = byKind(d.records);
      expect(r.DKIM).to.include({ name: 'tern._domainkey.mail.acme.test', type: 'TXT', status: 'pending' });
      expect(r.DKIM!.value).to.match(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/);
      expect(r.SPF).to.include({ name: 'bounces.mail.acme.test', type: 'TXT', value: `v=spf1 a:${MX_HOST} ~all` });
      expect(r.MX_BOUNCE).to.include({ name: 'bounces.mail.acme.test', type: 'MX', value: MX_HOST, priority: 10 });
      expect(r.MX_REPLY).to.include({ name: 'reply.mail.acme.test', type: 'MX', value: MX_HOST, priority: 10 });
      expect(r.DMARC).to.include({
        name: '_dmarc.mail.acme.test',
        type: 'TXT',
        value: 'v=DMARC1; p=none; rua=mailto:dmarc@bounces.mail.acme.test;',
      });
      expect(res.text).not.to.match(/PRIVATE KEY/);
    });

    it('publishes a 2048-bit public key that verifies signatures of the stored private key', async () => {
      const res = await create('dkim.acme.test');
      const p = /p=(\S+)$/.exec(byKind(res.json.records).DKIM!.value)![1]!;
      const publicKey = createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type: 'spki' });
      expect(publicKey.asymmetricKeyDetails?.modulusLength).to.equal(2048);
      const [row] = await api.deps.sql<{ dkim_private_key: string }[]>`
        select dkim_private_key from domains where id = ${res.json.id}`;
      // Stored sealed (docs/operations.md "Secrets at rest").
      expect(row!.dkim_private_key).to.match(/^v1:/);
      const pem = secretBox(api.config).open(row!.dkim_private_key, 'dkim-key');
      const data = Buffer.from('from:to:subject');
      const signature = sign('sha256', data, createPrivateKey(pem));
      expect(verify('sha256', data, publicKey, signature)).to.equal(true);
      const got = await api.request('GET', `/domains/${res.json.id}`, { token: org.key.token });
      expect(got.text).not.to.contain(pem.split('\n')[1]!);
    });

    it('stores IDN names as lower-case A-labels', async () => {
      const res = await create('Bücher.Example');
      expect(res.status).to.equal(201);
      expect(res.json.name).to.equal('xn--bcher-kva.example');
      expect(byKind(res.json.records).MX_REPLY!.name).to.equal('reply.xn--bcher-kva.example');
      const byName = await api.request('GET', '/domains/b%C3%BCcher.example', { token: org.key.token });
      expect(byName.status).to.equal(200);
      expect(byName.json.id).to.equal(res.json.id);
    });

    it('answers 422 for invalid names, naming the field', async () => {
      for (const name of [
        '',
        'localhost',
        'a..b.test',
        '-bad.test',
        'bad_.test',
        '1.2.3.4',
        'x'.repeat(64) + '.test',
      ]) {
        const res = await create(name);
        expect(res.status, name).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message).to.match(/body\.name/);
      }
      for (const body of [{}, { name: 42 }, { name: 'ok.test', extra: 1 }]) {
        const res = await api.request('POST', '/domains', { token: org.key.token, body });
        expectError(res, 422, 'validation_error', JSON.stringify(body));
        expect(res.json.error.message).to.match(/body\.(name|extra)/);
      }
      const raw = await api.request('POST', '/domains', {
        token: org.key.token,
        raw: '{"name":',
        headers: { 'content-type': 'application/json' },
      });
      expect(raw.status).to.equal(400);
      expect(raw.json.error.code).to.equal('invalid_json');
    });

    it('answers 409 conflict for a name the organization already has', async () => {
      expect((await create('dup.acme.test')).status).to.equal(201);
      const again = await create('DUP.acme.test.');
      expect(again.status).to.equal(409);
      expect(again.json.error).to.deep.equal({
        code: 'conflict',
        message: 'The domain dup.acme.test already exists in this organization',
      });
    });

    it('refuses SEND, FULL and test keys (403 forbidden)', async () => {
      for (const k of [
        { permission: 'SEND' as const },
        { permission: 'FULL' as const },
        { permission: 'FULL' as const, mode: 'test' as const },
      ]) {
        const key = await org.mint(k);
        for (const [method, path] of [
          ['POST', '/domains'],
          ['GET', '/domains'],
          ['POST', '/domains/dom_x/verify'],
        ] as const) {
          const body = method === 'POST' ? { name: 'x.test' } : undefined;
          const res = await api.request(method, path, { token: key.token, body });
          expect(res.status, `${k.permission} ${k.mode ?? 'live'} ${method} ${path}`).to.equal(403);
          expect(res.json.error.code).to.equal('forbidden');
        }
      }
    });
  });

  describe('POST /domains/:id/verify', () => {
    it('verifies a domain whose records are published; GET /keys/me then lists it', async () => {
      const created = await create('verify-me.test');
      const before = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(before.json.domains).not.to.include('verify-me.test');
      publish(dns, created.json.records);
      const res = await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
      expect(res.status).to.equal(200);
      expect(res.json.status).to.equal('verified');
      expect(res.json.verified_at).to.be.a('string');
      expect(res.json.records.map((r: ApiRecord) => r.status)).to.deep.equal(Array(5).fill('verified'));
      const me = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(me.json.domains).to.include('verify-me.test');
    });

    it('fails with per-record status and reasons for missing or wrong records', async () => {
      const created = await create('wrong.test');
      const other = await create('other-key.test');
      const r = byKind(created.json.records);
      dns.txt(r.DKIM!.name, [byKind(other.json.records).DKIM!.value]); // another domain's key
      dns.txt(r.SPF!.name, ['v=spf1 include:elsewhere.test -all']);
      dns.mx(r.MX_BOUNCE!.name, [{ exchange: MX_HOST, priority: 10 }]);
      // MX_REPLY and DMARC: not published at all.
      const res = await api.request('POST', `/domains/wrong.test/verify`, { token: org.key.token });
      expect(res.status).to.equal(200);
      expect(res.json.status).to.equal('failed');
      const got = byKind(res.json.records);
      expect(got.DKIM).to.include({ status: 'failed' });
      expect(got.DKIM!.reason).to.match(/another public key/);
      expect(got.SPF).to.include({ status: 'failed' });
      expect(got.SPF!.reason).to.contain(`a:${MX_HOST}`);
      expect(got.MX_BOUNCE).to.include({ status: 'verified' });
      expect(got.MX_BOUNCE).not.to.have.property('reason');
      expect(got.MX_REPLY).to.include({ status: 'failed', reason: 'No MX record found at reply.wrong.test' });
      expect(got.DMARC!.status).to.equal('failed');
      const me = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(me.json.domains).not.to.include('wrong.test');
    });

    it('verifies without DMARC, and keeps the domain pending when a lookup times out', async () => {
      const created = await create('slow.test');
      const records = created.json.records.filter((r: ApiRecord) => r.record !== 'DMARC');
      publish(dns, records);
      const ok = await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
      expect(ok.json.status).to.equal('verified');
      expect(byKind(ok.json.records).DMARC!.status).to.equal('failed');

      const slow = await create('slower.test');
      const rs = byKind(slow.json.records);
      publish(dns, slow.json.records);
      dns.silence(rs.MX_REPLY!.name);
      const res = await api.request('POST', `/domains/${slow.json.id}/verify`, { token: org.key.token });
      expect(res.json.status).to.equal('pending');
      expect(byKind(res.json.records).MX_REPLY!.status).to.equal('pending');
      expect(byKind(res.json.records).DKIM!.status).to.equal('verified');
    });

    it('fails a name another organization has verified', async () => {
      const created = await create('shared-name.test');
      publish(dns, created.json.records);
      expect(
        (await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token })).json.status,
      ).to.equal('verified');
      const rival = await seedOrg(api.deps.sql);
      const theirs = await create('shared-name.test', rival.key.token);
      expect(theirs.status).to.equal(201);
      const res = await api.request('POST', `/domains/${theirs.json.id}/verify`, { token: rival.key.token });
      expect(res.json.status).to.equal('failed');
      const dkim = byKind(res.json.records).DKIM!;
      expect(dkim.status).to.equal('failed');
      expect(dkim.reason).to.equal('shared-name.test is already verified by another organization on this install');
    });

    it('leaves the demo domain verified without a DNS look-up; npm start restores one a check failed', async () => {
      const demo = await seedOrg(api.deps.sql, { domains: [{ name: 'demo-verify.test' }] });
      const id = demo.domains['demo-verify.test']!.id;
      await api.deps.sql`update domains set demo = true where id = ${id}`;
      const res = await api.request('POST', `/domains/${id}/verify`, { token: demo.key.token });
      expect(res.status).to.equal(200);
      expect(res.json.status).to.equal('verified');
      const [row] = await api.deps.sql<{ status: string; last_checked_at: Date | null }[]>`
        select status, last_checked_at from domains where id = ${id}`;
      expect(row).to.deep.equal({ status: 'verified', last_checked_at: null });

      await api.deps.sql`update domains set status = 'failed' where id = ${id}`;
      expect(await restoreDemoDomain(api.deps.sql)).to.equal(1);
      expect(await restoreDemoDomain(api.deps.sql)).to.equal(0);
      const [back] = await api.deps.sql<{ status: string }[]>`select status from domains where id = ${id}`;
      expect(back!.status).to.equal('verified');
    });
  });

  describe('read, update, delete', () => {
    it('lists newest first with cursor pagination and reads by id or name', async () => {
      const all = await api.request('GET', '/domains?limit=100', { token: org.key.token });
      expect(all.status).to.equal(200);
      expect(all.json.object).to.equal('list');
      const ids = all.json.data.map((d: { id: string }) => d.id);
      expect(ids).to.deep.equal([...ids].sort().reverse());
      const page = await api.request('GET', `/domains?limit=2&after=${ids[0]}`, { token: org.key.token });
      expect(page.json.data.map((d: { id: string }) => d.id)).to.deep.equal(ids.slice(1, 3));
      expect(page.json.has_more).to.equal(ids.length > 3);
      const bad = await api.request('GET', '/domains?limit=0', { token: org.key.token });
      expect(bad.status).to.equal(422);
      const missing = await api.request('GET', '/domains/dom_01ARZ3NDEKTSV4RRFFQ69G5FAV', { token: org.key.token });
      expect(missing.status).to.equal(404);
      expect(missing.json.error.code).to.equal('not_found');
    });

    it('sets and clears the tracking overrides', async () => {
      const { json: d } = await create('tracking.test');
      const on = await api.request('PATCH', `/domains/${d.id}`, {
        token: org.key.token,
        body: { open_tracking: true, click_tracking: false },
      });
      expect(on.status).to.equal(200);
      expect(on.json).to.include({ open_tracking: true, click_tracking: false });
      const inherit = await api.request('PATCH', `/domains/${d.id}`, {
        token: org.key.token,
        body: { open_tracking: null },
      });
      expect(inherit.json).to.include({ open_tracking: null, click_tracking: false });
      for (const body of [{ open_tracking: 'yes' }, { tracking: true }]) {
        const res = await api.request('PATCH', `/domains/${d.id}`, { token: org.key.token, body });
        expectError(res, 422, 'validation_error');
        expect(res.json.error.message).to.match(/body\.(open_tracking|tracking)/);
      }
    });

    it('deletes a domain: 404 afterwards and GET /keys/me no longer lists it', async () => {
      const created = await create('gone.test');
      publish(dns, created.json.records);
      await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
      expect((await api.request('GET', '/keys/me', { token: org.key.token })).json.domains).to.include('gone.test');
      const del = await api.request('DELETE', `/domains/${created.json.id}`, { token: org.key.token });
      expect(del.status).to.equal(200);
      expect(del.json).to.deep.equal({ object: 'domain', id: created.json.id, name: 'gone.test', deleted: true });
      expectError(await api.request('GET', `/domains/${created.json.id}`, { token: org.key.token }), 404, 'not_found');
      expect((await api.request('DELETE', `/domains/${created.json.id}`, { token: org.key.token })).status).to.equal(
        404,
      );
      expect((await api.request('GET', '/keys/me', { token: org.key.token })).json.domains).not.to.include('gone.test');
    });

    it('refuses to delete a domain with messages not yet sent (409 invalid_state)', async () => {
      const { json: d } = await create('busy.test');
      await api.deps.sql`
        insert into emails (id, org_id, domain_id, mode, from_address, from_email, message_id, status)
        values ('em_busy', ${org.organization.id}, ${d.id}, 'live', 'a@busy.test', 'a@busy.test', 'em_busy@busy.test', 'queued')`;
      const res = await api.request('DELETE', `/domains/${d.id}`, { token: org.key.token });
      expect(res.status).to.equal(409);
      expect(res.json.error).to.deep.equal({
        code: 'invalid_state',
        message: 'busy.test has 1 message(s) not yet sent; cancel them or wait before deleting the domain',
      });
      await api.deps.sql`update emails set status = 'sent' where id = 'em_busy'`;
      expect((await api.request('DELETE', `/domains/${d.id}`, { token: org.key.token })).status).to.equal(200);
    });

    it("hides other organizations' domains and, for a restricted ADMIN key, domains outside its set", async () => {
      const rival = await seedOrg(api.deps.sql, { domains: [{ name: 'rival.test' }] });
      const theirs = rival.domains['rival.test']!;
      expectError(await api.request('GET', `/domains/${theirs.id}`, { token: org.key.token }), 404, 'not_found');
      expectError(await api.request('DELETE', `/domains/${theirs.id}`, { token: org.key.token }), 404, 'not_found');
      const own = await seedOrg(api.deps.sql, { domains: [{ name: 'mine.test' }, { name: 'notmine.test' }] });
      const restricted = await own.mint({ permission: 'ADMIN', domains: ['mine.test'] });
      const list = await api.request('GET', '/domains', { token: restricted.token });
      expect(list.json.data.map((d: { name: string }) => d.name)).to.deep.equal(['mine.test']);
      const hidden = await api.request('GET', '/domains/notmine.test', { token: restricted.token });
      expect(hidden.status).to.equal(404);
      const add = await create('new.test', restricted.token);
      expect(add.status).to.equal(403);
      expect(add.json.error.code).to.equal('forbidden_domain');
    });
  });
});
