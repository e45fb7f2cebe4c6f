// A domain-restricted ADMIN key (the CLI can mint one) manages only keys within its domains:
// rotating an unrestricted key would hand it that key's token and so every domain of the org.
import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('keys API with a domain-restricted ADMIN key', () => {
  let api: TestApi;
  let org: SeededOrg;
  let admin: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    admin = await org.mint({ permission: 'ADMIN', mode: 'live', domains: ['acme.test'] });
  });
  after(async () => api.close());

  it('cannot rotate or revoke an unrestricted key, nor one of another domain (403 forbidden_domain)', async () => {
    const open = await org.mint({ permission: 'FULL', mode: 'live' });
    const beta = await org.mint({ permission: 'SEND', mode: 'live', domains: ['beta.test'] });
    const both = await org.mint({ permission: 'SEND', mode: 'live', domains: ['acme.test', 'beta.test'] });
    for (const k of [open, beta, both]) {
      const rot = await api.request('POST', `/keys/${k.id}/rotate`, { token: admin.token, body: {} });
      expect(rot.status, `rotate ${k.id}`).to.equal(403);
      expect(rot.json.error.code).to.equal('forbidden_domain');
      expect(rot.text).to.not.match(/tern_live_/);
      const del = await api.request('DELETE', `/keys/${k.id}`, { token: admin.token });
      expect(del.status, `revoke ${k.id}`).to.equal(403);
      expect(del.json.error.code).to.equal('forbidden_domain');
      // The key still works.
      expect((await api.request('GET', '/keys/me', { token: k.token })).status).to.equal(200);
    }
  });

  it('rotates and revokes keys restricted within its domains', async () => {
    const own = await org.mint({ permission: 'SEND', mode: 'live', domains: ['acme.test'] });
    const rot = await api.request('POST', `/keys/${own.id}/rotate`, { token: admin.token, body: { expires_in: 0 } });
    expect(rot.status).to.equal(200);
    expect(rot.json.token).to.match(/^tern_live_/);
    const del = await api.request('DELETE', `/keys/${own.id}`, { token: admin.token });
    expect(del.status).to.equal(200);
    expect(del.json.deleted).to.equal(true);
  });
});
