// Contacts through HTTP (DESIGN §5; SPEC "Domain restriction" 4–5 and the Permissions table),
// and the stock Resend SDK's contacts calls pointed at Tern.
import { expect } from 'chai';
import { Resend } from 'resend';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

type Key = { id: string; token: string };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('contacts', () => {
  let api: TestApi;
  let org: SeededOrg;
  let send: Key;
  let sendTest: Key;
  let full: Key;
  let fullTest: Key;
  let rSend: Key;
  let rFull: Key;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
    sendTest = await org.mint({ permission: 'SEND', mode: 'test' });
    full = await org.mint({ permission: 'FULL' });
    fullTest = await org.mint({ permission: 'FULL', mode: 'test' });
    rSend = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    rFull = await org.mint({ permission: 'FULL', domains: ['acme.test'] });
  });
  after(async () => api.close());

  const upsert = (token: string, body: unknown) => api.request('POST', '/contacts', { token, body });

  describe('POST /contacts (upsert by email)', () => {
    it('creates (201, lower-cased address), then updates the same contact (200)', async () => {
      const created = await upsert(send.token, {
        email: 'Ann@Example.TEST',
        first_name: 'Ann',
        properties: { plan: 'pro', seats: 3 },
      });
      expect(created.status).to.equal(201);
      expect(created.json).to.deep.equal({
        object: 'contact',
        id: created.json.id,
        email: 'ann@example.test',
        first_name: 'Ann',
        last_name: null,
        properties: { plan: 'pro', seats: 3 },
        unsubscribed: false,
        created_at: created.json.created_at,
      });
      expect(created.json.id).to.match(/^ct_[0-9A-Z]{26}$/);
      expect(created.json.created_at).to.match(ISO);

      // Fields left out stay; properties merge, and a null property is removed.
      const updated = await upsert(sendTest.token, {
        email: 'ann@example.test',
        last_name: 'Lee',
        properties: { seats: null, team: 'a' },
      });
      expect(updated.status).to.equal(200);
      expect(updated.json).to.deep.include({
        id: created.json.id,
        first_name: 'Ann',
        last_name: 'Lee',
        properties: { plan: 'pro', team: 'a' },
        created_at: created.json.created_at,
      });
    });

    it('lets a domain-restricted key sign a contact up, recorded as starting no automation', async () => {
      const res = await upsert(rSend.token, { email: 'signup@example.test', first_name: 'Sig' });
      expect(res.status).to.equal(201);
      const [row] = await api.deps.sql`
        select automations_on_create, created_by_key_id from contacts where id = ${res.json.id}`;
      expect(row).to.deep.equal({ automations_on_create: false, created_by_key_id: rSend.id });
      const open = await upsert(send.token, { email: 'open@example.test' });
      const [row2] = await api.deps.sql`select automations_on_create from contacts where id = ${open.json.id}`;
      expect(row2!.automations_on_create).to.equal(true);
      // Updating through a restricted key is allowed too (names, properties).
      const again = await upsert(rSend.token, { email: 'open@example.test', first_name: 'Ope' });
      expect(again.status).to.equal(200);
      expect(again.json.first_name).to.equal('Ope');
    });

    it('refuses a subscription change from a restricted key (403 forbidden_domain)', async () => {
      for (const body of [
        { email: 'sub@example.test', unsubscribed: true },
        { email: 'sub@example.test', topics: [{ id: 'top_x', subscription: 'opt_in' }] },
      ]) {
        const res = await upsert(rSend.token, body);
        expect(res.status, JSON.stringify(body)).to.equal(403);
        expect(res.json.error.code).to.equal('forbidden_domain');
      }
      const [row] = await api.deps.sql`select 1 from contacts where email = 'sub@example.test'`;
      expect(row).to.equal(undefined);
    });

    it('sets topic choices with the upsert (unrestricted key), refusing unknown topics', async () => {
      const admin = org.key.token;
      const topic = await api.request('POST', '/topics', {
        token: admin,
        body: { name: 'News', default_subscription: 'opt_out' },
      });
      const res = await upsert(send.token, {
        email: 'topics@example.test',
        topics: [{ id: topic.json.id, subscription: 'opt_in' }],
      });
      expect(res.status).to.equal(201);
      const subs = await api.request('GET', `/contacts/${res.json.id}/subscriptions`, { token: send.token });
      expect(subs.json.topics).to.deep.equal([
        { id: topic.json.id, name: 'News', default_subscription: 'opt_out', subscription: 'opt_in', explicit: true },
      ]);
      const bad = await upsert(send.token, {
        email: 'topics2@example.test',
        topics: [{ id: 'top_01JAAAAAAAAAAAAAAAAAAAAAAA', subscription: 'opt_in' }],
      });
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.match(/^body\.topics\.0\.id/);
      const [row] = await api.deps.sql`select 1 from contacts where email = 'topics2@example.test'`;
      expect(row, 'the failed upsert left no contact').to.equal(undefined);
    });

    it('accepts and ignores a Resend audience_id', async () => {
      const res = await upsert(send.token, { email: 'aud@example.test', audience_id: 'aud_123' });
      expect(res.status).to.equal(201);
      expect(res.json).not.to.have.property('audience_id');
    });

    it('validates the body (422 naming the field)', async () => {
      const cases: [unknown, RegExp][] = [
        [{}, /body\.email is required/],
        [{ email: 'not-an-address' }, /body\.email must match format "email"/],
        [{ email: 'a@example.test', first_name: 5 }, /body\.first_name must be string/],
        [{ email: 'a@example.test', unsubscribed: 'yes' }, /body\.unsubscribed must be boolean/],
        [{ email: 'a@example.test', properties: { 'bad name': 1 } }, /body\.properties/],
        [{ email: 'a@example.test', properties: { nested: { a: 1 } } }, /body\.properties\.nested/],
        [{ email: 'a@example.test', segments: [{ id: 'seg_1' }] }, /body\.segments is not a known field/],
        [
          { email: 'a@example.test', topics: [{ id: 'top_1', subscription: 'maybe' }] },
          /body\.topics\.0\.subscription must be one of opt_in, opt_out/,
        ],
      ];
      for (const [body, re] of cases) {
        const res = await upsert(send.token, body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message, JSON.stringify(body)).to.match(re);
      }
      const malformed = await api.request('POST', '/contacts', {
        token: send.token,
        raw: '{"email":',
        headers: { 'content-type': 'application/json' },
      });
      expect(malformed.status).to.equal(400);
      expect(malformed.json.error.code).to.equal('invalid_json');
    });
  });

  describe('GET /contacts, GET and PATCH /contacts/{id}', () => {
    let ids: string[];
    before(async () => {
      ids = [];
      for (const [i, unsub] of [false, true, false, true, false].entries()) {
        const res = await upsert(send.token, { email: `list${i}@list.test`, unsubscribed: unsub });
        ids.push(res.json.id);
      }
    });

    it('lists newest first with limit / after / before and the filters', async () => {
      const page1 = await api.request('GET', '/contacts?limit=2', { token: rSend.token });
      expect(page1.status).to.equal(200);
      expect(page1.json.object).to.equal('list');
      expect(page1.json.has_more).to.equal(true);
      expect(page1.json.data.map((c: { id: string }) => c.id)).to.deep.equal([ids[4], ids[3]]);
      const page2 = await api.request('GET', `/contacts?limit=2&after=${ids[3]}`, { token: send.token });
      expect(page2.json.data.map((c: { id: string }) => c.id)).to.deep.equal([ids[2], ids[1]]);
      const back = await api.request('GET', `/contacts?limit=2&before=${ids[2]}`, { token: send.token });
      expect(back.json.data.map((c: { id: string }) => c.id)).to.deep.equal([ids[4], ids[3]]);

      const byEmail = await api.request('GET', '/contacts?email=LIST2@list.test', { token: send.token });
      expect(byEmail.json.data.map((c: { id: string }) => c.id)).to.deep.equal([ids[2]]);
      const unsub = await api.request('GET', '/contacts?unsubscribed=true&limit=100', { token: send.token });
      const unsubIds = unsub.json.data.map((c: { id: string }) => c.id);
      expect(unsubIds).to.include.members([ids[1], ids[3]]);
      expect(unsubIds).not.to.include.members([ids[0], ids[2], ids[4]]);

      const bad = await api.request('GET', '/contacts?limit=0', { token: send.token });
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.match(/query\.limit/);
      const unknown = await api.request('GET', '/contacts?color=red', { token: send.token });
      expectError(unknown, 422, 'validation_error');
      expect(unknown.json.error.message).to.match(/query\.color is not a known field/);
    });

    it('reads by id or by address; unknown is 404', async () => {
      const byId = await api.request('GET', `/contacts/${ids[0]}`, { token: send.token });
      expect(byId.status).to.equal(200);
      expect(byId.json.email).to.equal('list0@list.test');
      const byEmail = await api.request('GET', '/contacts/LIST0%40list.test', { token: rSend.token });
      expect(byEmail.json.id).to.equal(ids[0]);
      for (const ref of ['ct_01JAAAAAAAAAAAAAAAAAAAAAAA', 'nobody@list.test', 'garbage']) {
        const res = await api.request('GET', `/contacts/${ref}`, { token: send.token });
        expect(res.status, ref).to.equal(404);
        expect(res.json.error.code).to.equal('not_found');
      }
    });

    it('updates names, properties and unsubscribed; a restricted key not the last', async () => {
      const res = await api.request('PATCH', `/contacts/${ids[0]}`, {
        token: send.token,
        body: { first_name: 'Zed', properties: { plan: 'free' }, unsubscribed: true },
      });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.include({ first_name: 'Zed', properties: { plan: 'free' }, unsubscribed: true });
      const cleared = await api.request('PATCH', `/contacts/list0@list.test`, {
        token: rSend.token,
        body: { first_name: null },
      });
      expect(cleared.status).to.equal(200);
      expect(cleared.json.first_name).to.equal(null);
      const refused = await api.request('PATCH', `/contacts/${ids[0]}`, {
        token: rSend.token,
        body: { unsubscribed: false },
      });
      expect(refused.status).to.equal(403);
      expect(refused.json.error.code).to.equal('forbidden_domain');
      const bad = await api.request('PATCH', `/contacts/${ids[0]}`, { token: send.token, body: { email: 'x@y.test' } });
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.match(/body\.email is not a known field/);
      const missing = await api.request('PATCH', '/contacts/ct_01JAAAAAAAAAAAAAAAAAAAAAAA', {
        token: send.token,
        body: { first_name: 'x' },
      });
      expectError(missing, 404, 'not_found');
    });
  });

  describe('DELETE /contacts/{id} (FULL, live key, no domain restriction)', () => {
    it('refuses SEND (forbidden naming FULL), test keys (requires a live key), restricted keys (forbidden_domain)', async () => {
      const c = await upsert(send.token, { email: 'del@example.test' });
      const del = (token: string) => api.request('DELETE', `/contacts/${c.json.id}`, { token });
      const sendRes = await del(send.token);
      expect(sendRes.status).to.equal(403);
      expect(sendRes.json.error).to.include({ code: 'forbidden' });
      expect(sendRes.json.error.message).to.contain('FULL');
      const testRes = await del(fullTest.token);
      expect(testRes.status).to.equal(403);
      expect(testRes.json.error.code).to.equal('forbidden');
      expect(testRes.json.error.message).to.contain('requires a live key');
      const restricted = await del(rFull.token);
      expect(restricted.status).to.equal(403);
      expect(restricted.json.error.code).to.equal('forbidden_domain');
      const still = await api.request('GET', `/contacts/${c.json.id}`, { token: send.token });
      expect(still.status).to.equal(200);
    });

    it('deletes by id or address for a FULL live key (and ADMIN), then 404', async () => {
      const a = await upsert(send.token, { email: 'del-a@example.test' });
      const ok = await api.request('DELETE', `/contacts/${a.json.id}`, { token: full.token });
      expect(ok.status).to.equal(200);
      expect(ok.json).to.deep.equal({ object: 'contact', id: a.json.id, contact: a.json.id, deleted: true });
      const gone = await api.request('GET', `/contacts/${a.json.id}`, { token: send.token });
      expectError(gone, 404, 'not_found');
      const again = await api.request('DELETE', `/contacts/${a.json.id}`, { token: full.token });
      expectError(again, 404, 'not_found');
      await upsert(send.token, { email: 'del-b@example.test' });
      const byEmail = await api.request('DELETE', '/contacts/del-b@example.test', { token: org.key.token });
      expect(byEmail.status).to.equal(200);
    });
  });

  describe('organizations', () => {
    it('keeps contacts per organization', async () => {
      const other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
      const k = await other.mint({ permission: 'FULL' });
      const mine = await upsert(send.token, { email: 'shared@example.test', first_name: 'Mine' });
      const theirs = await upsert(k.token, { email: 'shared@example.test', first_name: 'Theirs' });
      expect(theirs.status).to.equal(201);
      expect(theirs.json.id).not.to.equal(mine.json.id);
      const cross = await api.request('GET', `/contacts/${mine.json.id}`, { token: k.token });
      expectError(cross, 404, 'not_found');
      const crossDel = await api.request('DELETE', `/contacts/${mine.json.id}`, { token: k.token });
      expectError(crossDel, 404, 'not_found');
    });
  });

  describe('Resend SDK', () => {
    function sdk(token: string): Resend {
      const previous = process.env.RESEND_BASE_URL;
      process.env.RESEND_BASE_URL = `${api.url}/api/v1`;
      try {
        return new Resend(token);
      } finally {
        if (previous === undefined) delete process.env.RESEND_BASE_URL;
        else process.env.RESEND_BASE_URL = previous;
      }
    }

    it('contacts.create → get → list → update → remove', async () => {
      const resend = sdk(full.token);
      const created = await resend.contacts.create({
        email: 'sdk@example.test',
        firstName: 'Sd',
        lastName: 'K',
        unsubscribed: false,
        properties: { plan: 'pro' },
      });
      expect(created.error).to.equal(null);
      const id = created.data!.id;
      expect(id).to.match(/^ct_/);

      const got = await resend.contacts.get({ email: 'sdk@example.test' });
      expect(got.error).to.equal(null);
      expect(got.data).to.deep.include({
        object: 'contact',
        id,
        first_name: 'Sd',
        last_name: 'K',
        unsubscribed: false,
      });
      const byId = await resend.contacts.get(id);
      expect(byId.data!.email).to.equal('sdk@example.test');

      const listed = await resend.contacts.list({ limit: 100 });
      expect(listed.error).to.equal(null);
      expect(listed.data!.data.map((c) => c.id)).to.include(id);

      const updated = await resend.contacts.update({ id, unsubscribed: true, firstName: 'Sdk' });
      expect(updated.error).to.equal(null);
      const after = await resend.contacts.get(id);
      expect(after.data).to.deep.include({ first_name: 'Sdk', unsubscribed: true });

      const removed = await resend.contacts.remove({ email: 'sdk@example.test' });
      expect(removed.error).to.equal(null);
      expect(removed.data).to.deep.include({ contact: id, deleted: true });
      const gone = await resend.contacts.get(id);
      expect(gone.data).to.equal(null);
      expect(gone.error).not.to.equal(null);
    });

    it('the audience-scoped calls (deprecated audienceId) reach the same contacts', async () => {
      const resend = sdk(full.token);
      const audienceId = 'aud_legacy';
      const created = await resend.contacts.create({ audienceId, email: 'aud-sdk@example.test', firstName: 'A' });
      expect(created.error).to.equal(null);
      const id = created.data!.id;
      const got = await resend.contacts.get({ audienceId, id });
      expect(got.data).to.deep.include({ id, email: 'aud-sdk@example.test' });
      const updated = await resend.contacts.update({ audienceId, email: 'aud-sdk@example.test', lastName: 'B' });
      expect(updated.error).to.equal(null);
      const plain = await api.request('GET', `/contacts/${id}`, { token: send.token });
      expect(plain.json).to.deep.include({ first_name: 'A', last_name: 'B' });
      const removed = await resend.contacts.remove({ audienceId, id });
      expect(removed.error).to.equal(null);
      expectError(await api.request('GET', `/contacts/${id}`, { token: send.token }), 404, 'not_found');
    });

    it('contacts.topics.update / list set and read a contact’s topic choices', async () => {
      const topic = await api.request('POST', '/topics', {
        token: org.key.token,
        body: { name: 'SDK topic', default_subscription: 'opt_in' },
      });
      const resend = sdk(send.token);
      const c = await resend.contacts.create({ email: 'sdk-topics@example.test' });
      const set = await resend.contacts.topics.update({
        email: 'sdk-topics@example.test',
        topics: [{ id: topic.json.id, subscription: 'opt_out' }],
      });
      expect(set.error).to.equal(null);
      expect(set.data).to.deep.equal({ id: c.data!.id });
      const listed = await resend.contacts.topics.list({ id: c.data!.id });
      expect(listed.error).to.equal(null);
      const mine = listed.data!.data.find((t) => t.id === topic.json.id);
      expect(mine).to.deep.include({ name: 'SDK topic', subscription: 'opt_out' });
    });
  });
});
