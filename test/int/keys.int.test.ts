import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { sleep } from '../helpers/wait.js';

describe('keys API', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, {
      domains: [{ name: 'acme.test' }, { name: 'beta.test' }, { name: 'pending.test', verified: false }],
    });
  });
  after(async () => api.close());

  describe('GET /keys/me', () => {
    it('returns exactly the identity fields for the ADMIN key', async () => {
      const res = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({
        id: org.key.id,
        name: 'Admin key',
        mode: 'live',
        permission: 'ADMIN',
        domains: ['acme.test', 'beta.test'],
      });
      expect(res.text).not.to.contain(org.key.token);
    });

    it('lists the restriction for a restricted test key', async () => {
      const k = await org.mint({ permission: 'SEND', mode: 'test', domains: ['beta.test', 'pending.test'] });
      const res = await api.request('GET', '/keys/me', { token: k.token });
      expect(res.status).to.equal(200);
      expect(res.json).to.include({ id: k.id, mode: 'test', permission: 'SEND' });
      expect(res.json.domains).to.deep.equal(['beta.test', 'pending.test']);
    });

    it('answers 401 unauthorized for missing, malformed and unknown keys', async () => {
      const variants: Record<string, string>[] = [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer nope' }];
      for (const headers of variants) {
        const res = await api.request('GET', '/keys/me', { headers });
        expect(res.status).to.equal(401);
        expect(res.json.error.code).to.equal('unauthorized');
      }
      const unknown = await api.request('GET', '/keys/me', { token: `tern_live_${'A'.repeat(43)}` });
      expect(unknown.status).to.equal(401);
      expect(unknown.json).to.deep.equal({ error: { code: 'unauthorized', message: 'API key is invalid' } });
    });
  });

  describe('management', () => {
    it('mints a SEND key whose token works once and is never shown again', async () => {
      const res = await api.request('POST', '/keys', {
        token: org.key.token,
        body: { name: 'ci', permission: 'SEND', mode: 'test', domains: ['acme.test'] },
      });
      expect(res.status).to.equal(201);
      expect(res.json).to.include({ object: 'api_key', name: 'ci', permission: 'SEND', mode: 'test' });
      expect(res.json.token).to.match(/^tern_test_[0-9A-Za-z]{43}$/);
      expect(res.json.token_prefix).to.equal(res.json.token.slice(0, 12));
      expect(res.json.domains).to.deep.equal(['acme.test']);
      const me = await api.request('GET', '/keys/me', { token: res.json.token });
      expect(me.json.id).to.equal(res.json.id);
      const got = await api.request('GET', `/keys/${res.json.id}`, { token: org.key.token });
      expect(got.status).to.equal(200);
      expect(got.json).not.to.have.property('token');
      const [row] = await api.deps
        .sql`select token_hash from api_key_tokens t join api_keys k on k.id = t.key_id where k.id = ${res.json.id}`;
      expect(row!.token_hash).to.match(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.to.contain(res.json.token.slice(12));
    });

    it('refuses to mint an ADMIN key (403 forbidden)', async () => {
      const res = await api.request('POST', '/keys', {
        token: org.key.token,
        body: { name: 'x', permission: 'ADMIN' },
      });
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden');
    });

    it('refuses to rotate an ADMIN key (403 forbidden)', async () => {
      const res = await api.request('POST', `/keys/${org.key.id}/rotate`, { token: org.key.token });
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden');
    });

    it('names the tier a lower key lacks', async () => {
      const k = await org.mint({ permission: 'FULL' });
      const res = await api.request('POST', '/keys', { token: k.token, body: { name: 'x', permission: 'SEND' } });
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden');
      expect(res.json.error.message).to.contain('ADMIN');
    });

    it('validates the body (422 naming the field)', async () => {
      const res = await api.request('POST', '/keys', { token: org.key.token, body: { name: 'x', permission: 'ROOT' } });
      expect(res.status).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.contain('permission');
      const dom = await api.request('POST', '/keys', {
        token: org.key.token,
        body: { name: 'x', permission: 'SEND', domains: ['other.test'] },
      });
      expectError(dom, 422, 'validation_error');
      expect(dom.json.error.message).to.contain('other.test');
    });

    it('revokes a key: 401 afterwards', async () => {
      const k = await org.mint({ permission: 'SEND' });
      expect((await api.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
      const del = await api.request('DELETE', `/keys/${k.id}`, { token: org.key.token });
      expect(del.status).to.equal(200);
      expect(del.json.revoked_at).to.be.a('string');
      const after = await api.request('GET', '/keys/me', { token: k.token });
      expectError(after, 401, 'unauthorized');
      expect(after.json.error.message).to.contain('revoked');
    });

    it('rotates with a grace period: both tokens work, then only the new one', async () => {
      const k = await org.mint({ permission: 'FULL' });
      const rot = await api.request('POST', `/keys/${k.id}/rotate`, { token: org.key.token, body: { expires_in: 1 } });
      expect(rot.status).to.equal(200);
      expect(rot.json.id).to.equal(k.id);
      expect(rot.json.token).to.not.equal(k.token);
      expect((await api.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
      expect((await api.request('GET', '/keys/me', { token: rot.json.token })).status).to.equal(200);
      await sleep(1100);
      const old = await api.request('GET', '/keys/me', { token: k.token });
      expectError(old, 401, 'unauthorized');
      expect(old.json.error.message).to.contain('expired');
      expect((await api.request('GET', '/keys/me', { token: rot.json.token })).status).to.equal(200);
    });

    it('lists keys newest first with cursor pagination', async () => {
      const page1 = await api.request('GET', '/keys?limit=2', { token: org.key.token });
      expect(page1.status).to.equal(200);
      expect(page1.json.object).to.equal('list');
      expect(page1.json.data).to.have.length(2);
      expect(page1.json.has_more).to.equal(true);
      const page2 = await api.request('GET', `/keys?limit=2&after=${page1.json.data[1].id}`, { token: org.key.token });
      expect(page2.json.data[0].id < page1.json.data[1].id).to.equal(true);
      const bad = await api.request('GET', '/keys?limit=500', { token: org.key.token });
      expectError(bad, 422, 'validation_error');
    });

    it("answers 404 for another organization's key", async () => {
      const other = await seedOrg(api.deps.sql);
      const res = await api.request('GET', `/keys/${other.key.id}`, { token: org.key.token });
      expect(res.status).to.equal(404);
      expect(res.json.error.code).to.equal('not_found');
    });
  });
});
