import { expect } from 'chai';
import { addSuppression, findSuppressedEmails, findSuppression } from '../../shared/db/suppressions.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

type Key = { id: string; token: string };

describe('suppressions', () => {
  let api: TestApi;
  let org: SeededOrg;
  let orgId: string;
  let send: Key;
  let full: Key;
  let fullTest: Key;
  let rSend: Key;
  let rFull: Key;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    orgId = org.organization.id;
    await unthrottle(api, orgId);
    send = await org.mint({ permission: 'SEND' });
    full = await org.mint({ permission: 'FULL' });
    fullTest = await org.mint({ permission: 'FULL', mode: 'test' });
    rSend = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    rFull = await org.mint({ permission: 'FULL', domains: ['acme.test'] });
  });
  after(async () => api.close());

  const post = (token: string, body: unknown) => api.request('POST', '/suppressions', { token, body });
  const ids = (res: { json: { data: { id: string }[] } }) => res.json.data.map((s) => s.id);

  describe('POST /suppressions', () => {
    it('adds an org-wide row (lower-cased), then answers 200 with the existing row', async () => {
      const res = await post(send.token, { email: 'Bob@Example.TEST' });
      expect(res.status).to.equal(201);
      expect(res.json).to.deep.equal({
        object: 'suppression',
        id: res.json.id,
        email: 'bob@example.test',
        pattern: null,
        domain: null,
        reason: 'manual',
        source_email_id: null,
        created_at: res.json.created_at,
      });
      expect(res.json.id).to.match(/^sup_[0-9A-Z]{26}$/);
      expect(res.json.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const again = await post(send.token, { email: 'bob@example.test' });
      expect(again.status).to.equal(200);
      expect(again.json.id).to.equal(res.json.id);
    });

    it('adds a row for one domain, named by name or id', async () => {
      const byName = await post(send.token, { email: 'carl@example.test', domain: 'ACME.test' });
      expect(byName.status).to.equal(201);
      expect(byName.json.domain).to.equal('acme.test');
      const byId = await post(send.token, { email: 'carl@example.test', domain: org.domains['beta.test']!.id });
      expect(byId.status).to.equal(201);
      expect(byId.json.domain).to.equal('beta.test');
      expect(byId.json.id).not.to.equal(byName.json.id);
    });

    it('keeps the reason of a row the delivery engine added', async () => {
      await addSuppression(api.deps.sql, {
        orgId,
        email: 'hard@example.test',
        domainId: null,
        reason: 'hard_bounce',
        sourceEmailId: 'em_01JAAAAAAAAAAAAAAAAAAAAAAA',
      });
      const res = await post(send.token, { email: 'hard@example.test' });
      expect(res.status).to.equal(200);
      expect(res.json).to.include({ reason: 'hard_bounce', source_email_id: 'em_01JAAAAAAAAAAAAAAAAAAAAAAA' });
    });

    it('validates the body (422 naming the field)', async () => {
      const cases: [unknown, RegExp][] = [
        [{}, /body must have exactly one of email \(an address\) and pattern/],
        [{ email: 'not-an-address' }, /body\.email must match format "email"/],
        [{ email: 5 }, /body\.email must be string/],
        [
          { email: 'a@example.test', domain: 'nope.test' },
          /body\.domain: "nope\.test" is not a domain of this organization/,
        ],
        [{ email: 'a@example.test', reason: 'manual' }, /body\.reason is not a known field/],
      ];
      for (const [body, pattern] of cases) {
        const res = await post(send.token, body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message).to.match(pattern);
      }
    });

    it('a restricted key must pass one of its own domains (403 forbidden_domain)', async () => {
      for (const body of [
        { email: 'r@example.test' },
        { email: 'r@example.test', domain: 'beta.test' },
        { email: 'r@example.test', domain: 'nope.test' },
      ]) {
        const res = await post(rSend.token, body);
        expect(res.status, JSON.stringify(body)).to.equal(403);
        expect(res.json.error.code).to.equal('forbidden_domain');
      }
      const ok = await post(rSend.token, { email: 'r@example.test', domain: 'acme.test' });
      expect(ok.status).to.equal(201);
      expect(ok.json.domain).to.equal('acme.test');
    });
  });

  describe('reading', () => {
    let wide: string;
    let acme: string;
    let beta: string;

    before(async () => {
      wide = (await post(send.token, { email: 'read@example.test' })).json.id;
      acme = (await post(send.token, { email: 'read@example.test', domain: 'acme.test' })).json.id;
      beta = (await post(send.token, { email: 'read@example.test', domain: 'beta.test' })).json.id;
    });

    it('lists every row to an unrestricted key, with filters', async () => {
      const all = await api.request('GET', '/suppressions?email=READ@example.test', { token: send.token });
      expect(all.status).to.equal(200);
      expect(all.json.object).to.equal('list');
      expect(ids(all)).to.deep.equal([beta, acme, wide]);
      const byDomain = await api.request('GET', '/suppressions?email=read@example.test&domain=beta.test', {
        token: send.token,
      });
      expect(ids(byDomain)).to.deep.equal([beta]);
      const hard = await api.request('GET', '/suppressions?reason=hard_bounce', { token: send.token });
      expect(hard.json.data.map((s: { email: string }) => s.email)).to.deep.equal(['hard@example.test']);
      const bad = await api.request('GET', '/suppressions?reason=bored', { token: send.token });
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.match(/query\.reason must be one of/);
    });

    it("shows a restricted key its domains' rows and org-wide rows only", async () => {
      const list = await api.request('GET', '/suppressions?email=read@example.test', { token: rSend.token });
      expect(ids(list)).to.deep.equal([acme, wide]);
      const everything = await api.request('GET', '/suppressions?limit=100', { token: rSend.token });
      expect(everything.json.data.every((s: { domain: string | null }) => s.domain !== 'beta.test')).to.equal(true);
      const foreign = await api.request('GET', '/suppressions?domain=beta.test', { token: rSend.token });
      expect(foreign.status).to.equal(403);
      expect(foreign.json.error.code).to.equal('forbidden_domain');
    });

    it('gets a row by id or by address; a restricted key gets 404 outside its scope', async () => {
      const byId = await api.request('GET', `/suppressions/${beta}`, { token: send.token });
      expect(byId.status).to.equal(200);
      expect(byId.json).to.include({ id: beta, domain: 'beta.test' });
      // An address names its org-wide row first, or the one of `domain`.
      const byEmail = await api.request('GET', '/suppressions/Read@example.test', { token: send.token });
      expect(byEmail.json.id).to.equal(wide);
      const picked = await api.request('GET', '/suppressions/read@example.test?domain=acme.test', {
        token: send.token,
      });
      expect(picked.json.id).to.equal(acme);

      const hidden = await api.request('GET', `/suppressions/${beta}`, { token: rSend.token });
      expect(hidden.status).to.equal(404);
      expect(hidden.json.error.code).to.equal('not_found');
      expect((await api.request('GET', `/suppressions/${wide}`, { token: rSend.token })).status).to.equal(200);
      expect((await api.request('GET', `/suppressions/${acme}`, { token: rSend.token })).status).to.equal(200);
      expect((await api.request('GET', '/suppressions/nobody@example.test', { token: send.token })).status).to.equal(
        404,
      );
      const other = await seedOrg(api.deps.sql);
      expectError(await api.request('GET', `/suppressions/${wide}`, { token: other.key.token }), 404, 'not_found');
    });

    it('paginates newest first', async () => {
      const fresh = await seedOrg(api.deps.sql);
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        made.push((await post(fresh.key.token, { email: `p${i}@example.test` })).json.id);
      }
      const p1 = await api.request('GET', '/suppressions?limit=2', { token: fresh.key.token });
      expect(ids(p1)).to.deep.equal([made[4], made[3]]);
      expect(p1.json.has_more).to.equal(true);
      const p3 = await api.request('GET', `/suppressions?limit=2&after=${made[1]}`, { token: fresh.key.token });
      expect(ids(p3)).to.deep.equal([made[0]]);
      expect(p3.json.has_more).to.equal(false);
      const back = await api.request('GET', `/suppressions?limit=2&before=${made[0]}`, { token: fresh.key.token });
      // The page just before the cursor: the two rows closest to it, newest first.
      expect(ids(back)).to.deep.equal([made[2], made[1]]);
      expect(back.json.has_more).to.equal(true);
    });
  });

  describe('DELETE /suppressions/:id', () => {
    let wide: string;
    let acme: string;
    let beta: string;

    beforeEach(async () => {
      await api.deps.sql`delete from suppressions where email = 'del@example.test'`;
      wide = (await post(send.token, { email: 'del@example.test' })).json.id;
      acme = (await post(send.token, { email: 'del@example.test', domain: 'acme.test' })).json.id;
      beta = (await post(send.token, { email: 'del@example.test', domain: 'beta.test' })).json.id;
    });

    it('needs FULL and a live key (403 forbidden)', async () => {
      for (const token of [send.token, rSend.token, fullTest.token]) {
        const res = await api.request('DELETE', `/suppressions/${acme}`, { token });
        expect(res.status).to.equal(403);
        expect(res.json.error.code).to.equal('forbidden');
      }
      const stillThere = await api.request('GET', `/suppressions/${acme}`, { token: send.token });
      expect(stillThere.status).to.equal(200);
    });

    it('deletes one row by id', async () => {
      const res = await api.request('DELETE', `/suppressions/${beta}`, { token: full.token });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({
        object: 'suppression',
        id: beta,
        email: 'del@example.test',
        pattern: null,
        deleted: true,
        deleted_ids: [beta],
      });
      expectError(await api.request('GET', `/suppressions/${beta}`, { token: full.token }), 404, 'not_found');
      expectError(await api.request('DELETE', `/suppressions/${beta}`, { token: full.token }), 404, 'not_found');
    });

    it('deletes every row of an address, or the one of ?domain=', async () => {
      const one = await api.request('DELETE', '/suppressions/del@example.test?domain=acme.test', { token: full.token });
      expect(one.json.deleted_ids).to.deep.equal([acme]);
      const rest = await api.request('DELETE', '/suppressions/DEL@example.test', { token: full.token });
      expect(rest.status).to.equal(200);
      expect(rest.json.deleted_ids).to.have.members([wide, beta]);
      expect(await findSuppression(api.deps.sql, orgId, null, 'del@example.test')).to.equal(null);
    });

    it("lets a restricted FULL key delete only its own domains' rows (others are 404)", async () => {
      for (const id of [wide, beta]) {
        const res = await api.request('DELETE', `/suppressions/${id}`, { token: rFull.token });
        expect(res.status).to.equal(404);
        expect(res.json.error.code).to.equal('not_found');
      }
      const byEmail = await api.request('DELETE', '/suppressions/del@example.test', { token: rFull.token });
      expect(byEmail.status).to.equal(200);
      expect(byEmail.json.deleted_ids).to.deep.equal([acme]);
      const again = await api.request('DELETE', '/suppressions/del@example.test', { token: rFull.token });
      expectError(again, 404, 'not_found');
      const left = await api.request('GET', '/suppressions?email=del@example.test', { token: full.token });
      expect(ids(left)).to.deep.equal([beta, wide]);
      const foreign = await api.request('DELETE', `/suppressions/del@example.test?domain=beta.test`, {
        token: rFull.token,
      });
      expect(foreign.status).to.equal(403);
      expect(foreign.json.error.code).to.equal('forbidden_domain');
    });
  });

  describe('functions for the delivery engine', () => {
    it('findSuppression matches org-wide rows and rows of the sending domain only', async () => {
      const sql = api.deps.sql;
      const acmeId = org.domains['acme.test']!.id;
      const betaId = org.domains['beta.test']!.id;
      const first = await addSuppression(sql, {
        orgId,
        email: 'Eng@Example.test',
        domainId: acmeId,
        reason: 'complaint',
        sourceEmailId: null,
      });
      expect(first).to.include({ email: 'eng@example.test', reason: 'complaint' });
      // Idempotent: a second add for the same address and domain changes nothing.
      expect(
        await addSuppression(sql, {
          orgId,
          email: 'eng@example.test',
          domainId: acmeId,
          reason: 'manual',
          sourceEmailId: null,
        }),
      ).to.equal(null);
      expect((await findSuppression(sql, orgId, acmeId, 'ENG@example.test'))?.id).to.equal(first!.id);
      expect(await findSuppression(sql, orgId, betaId, 'eng@example.test')).to.equal(null);
      const wide = await addSuppression(sql, {
        orgId,
        email: 'eng@example.test',
        domainId: null,
        reason: 'unsubscribe',
        sourceEmailId: null,
      });
      expect((await findSuppression(sql, orgId, betaId, 'eng@example.test'))?.id).to.equal(wide!.id);
      expect((await findSuppression(sql, orgId, acmeId, 'eng@example.test'))?.id).to.equal(wide!.id);
      const other = await seedOrg(sql);
      expect(await findSuppression(sql, other.organization.id, null, 'eng@example.test')).to.equal(null);
      const set = await findSuppressedEmails(sql, orgId, betaId, ['ENG@example.test', 'free@example.test']);
      expect([...set]).to.deep.equal(['eng@example.test']);
    });
  });
});
