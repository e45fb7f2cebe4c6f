// Topics, subscriptions with topic defaults, and segment filters against a seeded set of
// contacts (DESIGN §5), through HTTP; management routes are ADMIN and live-only.
import { expect } from 'chai';
import { Resend } from 'resend';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

type Key = { id: string; token: string };
const emails = (res: TestResponse) => (res.json.data as { email: string }[]).map((c) => c.email).sort();

describe('topics, subscriptions and segments', () => {
  let api: TestApi;
  let org: SeededOrg;
  let admin: string;
  let send: Key;
  let sendTest: Key;
  let full: Key;
  let rSend: Key;
  let rAdmin: Key;
  let news: string; // default opt_in
  let promos: string; // default opt_out

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    send = await org.mint({ permission: 'SEND' });
    sendTest = await org.mint({ permission: 'SEND', mode: 'test' });
    full = await org.mint({ permission: 'FULL' });
    rSend = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    rAdmin = await org.mint({ permission: 'ADMIN', domains: ['acme.test'] });
  });
  after(async () => api.close());

  describe('topics (ADMIN, live)', () => {
    it('creates, reads, lists, updates and deletes', async () => {
      const created = await api.request('POST', '/topics', {
        token: admin,
        body: { name: 'News', description: 'Monthly news', default_subscription: 'opt_in' },
      });
      expect(created.status).to.equal(201);
      expect(created.json).to.deep.equal({
        object: 'topic',
        id: created.json.id,
        name: 'News',
        description: 'Monthly news',
        default_subscription: 'opt_in',
        created_at: created.json.created_at,
      });
      expect(created.json.id).to.match(/^top_/);
      news = created.json.id;
      const p = await api.request('POST', '/topics', {
        token: admin,
        body: { name: 'Promos', default_subscription: 'opt_out' },
      });
      promos = p.json.id;
      expect(p.json.description).to.equal(null);

      const got = await api.request('GET', `/topics/${news}`, { token: rAdmin.token });
      expect(got.json.name).to.equal('News');
      const listed = await api.request('GET', '/topics?limit=1', { token: admin });
      expect(listed.json).to.deep.include({ object: 'list', has_more: true });
      expect(listed.json.data.map((t: { id: string }) => t.id)).to.deep.equal([promos]);

      const tmp = await api.request('POST', '/topics', {
        token: admin,
        body: { name: 'Tmp', default_subscription: 'opt_in' },
      });
      const patched = await api.request('PATCH', `/topics/${tmp.json.id}`, {
        token: admin,
        body: { name: 'Tmp2', default_subscription: 'opt_out' },
      });
      expect(patched.json).to.deep.include({ name: 'Tmp2', default_subscription: 'opt_out' });
      const del = await api.request('DELETE', `/topics/${tmp.json.id}`, { token: admin });
      expect(del.json).to.deep.equal({ object: 'topic', id: tmp.json.id, deleted: true });
      expectError(await api.request('GET', `/topics/${tmp.json.id}`, { token: admin }), 404, 'not_found');
    });

    it('refuses non-ADMIN keys, and restricted ADMIN keys on changes', async () => {
      for (const k of [send, full, sendTest]) {
        const res = await api.request('POST', '/topics', {
          token: k.token,
          body: { name: 'x', default_subscription: 'opt_in' },
        });
        expect(res.status).to.equal(403);
        expect(res.json.error.code).to.equal('forbidden');
        expect(res.json.error.message).to.contain('ADMIN');
      }
      const restricted = await api.request('POST', '/topics', {
        token: rAdmin.token,
        body: { name: 'x', default_subscription: 'opt_in' },
      });
      expect(restricted.status).to.equal(403);
      expect(restricted.json.error.code).to.equal('forbidden_domain');
    });

    it('validates (422 naming the field)', async () => {
      const cases: [unknown, RegExp][] = [
        [{ default_subscription: 'opt_in' }, /body\.name is required/],
        [{ name: 'x' }, /body\.default_subscription is required/],
        [{ name: 'x', default_subscription: 'maybe' }, /body\.default_subscription must be one of opt_in, opt_out/],
        [{ name: '', default_subscription: 'opt_in' }, /body\.name/],
      ];
      for (const [body, re] of cases) {
        const res = await api.request('POST', '/topics', { token: admin, body });
        expectError(res, 422, 'validation_error', JSON.stringify(body));
        expect(res.json.error.message).to.match(re);
      }
    });

    it('works through the Resend SDK', async () => {
      const previous = process.env.RESEND_BASE_URL;
      process.env.RESEND_BASE_URL = `${api.url}/api/v1`;
      const resend = new Resend(admin);
      if (previous === undefined) delete process.env.RESEND_BASE_URL;
      else process.env.RESEND_BASE_URL = previous;
      const created = await resend.topics.create({ name: 'SDK', defaultSubscription: 'opt_in' });
      expect(created.error).to.equal(null);
      const id = created.data!.id;
      const updated = await resend.topics.update({ id, name: 'SDK 2' });
      expect(updated.error).to.equal(null);
      const got = await resend.topics.get(id);
      expect(got.data).to.deep.include({ id, name: 'SDK 2', default_subscription: 'opt_in' });
      const seg = await resend.segments.create({ name: 'Members' });
      expect(seg.error).to.equal(null);
      expect((await resend.segments.get(seg.data!.id)).data).to.deep.include({ name: 'Members', filter: { any: [] } });
      expect((await resend.segments.remove(seg.data!.id)).error).to.equal(null);
      expect((await resend.topics.remove(id)).error).to.equal(null);
    });
  });

  describe('subscriptions', () => {
    let ct: string;
    before(async () => {
      const c = await api.request('POST', '/contacts', { token: send.token, body: { email: 'subs@example.test' } });
      ct = c.json.id;
    });

    it('follows the topic defaults until the contact chooses', async () => {
      const res = await api.request('GET', `/contacts/${ct}/subscriptions`, { token: rSend.token });
      expect(res.status).to.equal(200);
      const byId = Object.fromEntries(res.json.topics.map((t: { id: string }) => [t.id, t]));
      expect(byId[news]).to.deep.include({ subscription: 'opt_in', explicit: false });
      expect(byId[promos]).to.deep.include({ subscription: 'opt_out', explicit: false });
      expect(res.json).to.deep.include({ object: 'subscriptions', contact_id: ct, unsubscribed: false });
    });

    it('sets choices and the global flag (SEND, test keys too); a later default change spares choices', async () => {
      const res = await api.request('POST', `/contacts/subs@example.test/subscriptions`, {
        token: sendTest.token,
        body: {
          topics: [
            { id: news, subscription: 'opt_out' },
            { id: promos, subscription: 'opt_in' },
          ],
          unsubscribed: true,
        },
      });
      expect(res.status).to.equal(200);
      const byId = Object.fromEntries(res.json.topics.map((t: { id: string }) => [t.id, t]));
      expect(byId[news]).to.deep.include({ subscription: 'opt_out', explicit: true });
      expect(byId[promos]).to.deep.include({ subscription: 'opt_in', explicit: true });
      expect(res.json.unsubscribed).to.equal(true);
      const contact = await api.request('GET', `/contacts/${ct}`, { token: send.token });
      expect(contact.json.unsubscribed).to.equal(true);

      const back = await api.request('POST', `/contacts/${ct}/subscriptions`, {
        token: send.token,
        body: { unsubscribed: false },
      });
      expect(back.json.unsubscribed).to.equal(false);
      expect(back.json.topics.find((t: { id: string }) => t.id === news).subscription).to.equal('opt_out');

      // A topic's new default moves the contacts that never chose, not those that did.
      const t = await api.request('POST', '/topics', {
        token: admin,
        body: { name: 'Temp', default_subscription: 'opt_in' },
      });
      const other = await api.request('POST', '/contacts', {
        token: send.token,
        body: { email: 'other@example.test' },
      });
      await api.request('POST', `/contacts/${ct}/subscriptions`, {
        token: send.token,
        body: { topics: [{ id: t.json.id, subscription: 'opt_in' }] },
      });
      await api.request('PATCH', `/topics/${t.json.id}`, { token: admin, body: { default_subscription: 'opt_out' } });
      const pick = async (ref: string) =>
        (await api.request('GET', `/contacts/${ref}/subscriptions`, { token: send.token })).json.topics.find(
          (x: { id: string }) => x.id === t.json.id,
        );
      expect(await pick(ct)).to.deep.include({ subscription: 'opt_in', explicit: true });
      expect(await pick(other.json.id)).to.deep.include({ subscription: 'opt_out', explicit: false });
      await api.request('DELETE', `/topics/${t.json.id}`, { token: admin });
      expect(await pick(ct)).to.equal(undefined);
    });

    it('refuses a restricted key (403 forbidden_domain), and validates', async () => {
      const r = await api.request('POST', `/contacts/${ct}/subscriptions`, {
        token: rSend.token,
        body: { unsubscribed: true },
      });
      expect(r.status).to.equal(403);
      expect(r.json.error.code).to.equal('forbidden_domain');
      const cases: [unknown, RegExp][] = [
        [{}, /body must NOT have fewer than 1 properties/],
        [{ topics: [{ id: news }] }, /body\.topics\.0\.subscription is required/],
        [{ topics: [{ id: 'top_01JAAAAAAAAAAAAAAAAAAAAAAA', subscription: 'opt_in' }] }, /^body\.topics\.0\.id/],
        [{ unsubscribed: 'no' }, /body\.unsubscribed must be boolean/],
      ];
      for (const [body, re] of cases) {
        const res = await api.request('POST', `/contacts/${ct}/subscriptions`, { token: send.token, body });
        expectError(res, 422, 'validation_error', JSON.stringify(body));
        expect(res.json.error.message).to.match(re);
      }
      const missing = await api.request('POST', '/contacts/nobody@example.test/subscriptions', {
        token: send.token,
        body: { unsubscribed: true },
      });
      expectError(missing, 404, 'not_found');
    });
  });

  describe('segments', () => {
    // Seeded contacts: plan / seats properties, names, unsubscribed, topic choices.
    const people = [
      { email: 'alice@corp.test', first_name: 'Alice', properties: { plan: 'pro', seats: 10 } },
      { email: 'bob@corp.test', first_name: 'Bob', properties: { plan: 'free', seats: 1 } },
      { email: 'carol@mail.test', first_name: 'Carol', properties: { plan: 'pro', seats: 3 }, unsubscribed: true },
      { email: 'dave@mail.test', last_name: 'Dee', properties: { plan: 'team', seats: '7' } },
      { email: 'erin@corp.test', properties: {} },
    ];
    before(async () => {
      for (const p of people) {
        const res = await api.request('POST', '/contacts', { token: send.token, body: p });
        expect(res.status).to.equal(201);
      }
      // alice opts out of News (default opt_in); bob opts in to Promos (default opt_out).
      await api.request('POST', '/contacts/alice@corp.test/subscriptions', {
        token: send.token,
        body: { topics: [{ id: news, subscription: 'opt_out' }] },
      });
      await api.request('POST', '/contacts/bob@corp.test/subscriptions', {
        token: send.token,
        body: { topics: [{ id: promos, subscription: 'opt_in' }] },
      });
    });

    async function select(filter: unknown): Promise<string[]> {
      const seg = await api.request('POST', '/segments', { token: admin, body: { name: 'probe', filter } });
      expect(seg.status, JSON.stringify(seg.json)).to.equal(201);
      const res = await api.request('GET', `/segments/${seg.json.id}/contacts?limit=100`, { token: admin });
      expect(res.status).to.equal(200);
      await api.request('DELETE', `/segments/${seg.json.id}`, { token: admin });
      // Only the seeded people (other tests add contacts to the same org).
      return emails(res).filter((e) => people.some((p) => p.email === e));
    }

    it('selects by contact fields', async () => {
      expect(await select({ field: 'email', op: 'ends_with', value: '@CORP.test' })).to.deep.equal([
        'alice@corp.test',
        'bob@corp.test',
        'erin@corp.test',
      ]);
      expect(await select({ field: 'unsubscribed', op: 'eq', value: true })).to.deep.equal(['carol@mail.test']);
      expect(await select({ field: 'first_name', op: 'exists', value: false })).to.deep.equal([
        'dave@mail.test',
        'erin@corp.test',
      ]);
      expect(await select({ field: 'first_name', op: 'in', value: ['Alice', 'Carol'] })).to.deep.equal([
        'alice@corp.test',
        'carol@mail.test',
      ]);
      expect(await select({ field: 'created_at', op: 'lt', value: '2000-01-01T00:00:00Z' })).to.deep.equal([]);
      expect(await select({ field: 'created_at', op: 'gte', value: '2000-01-01' })).to.have.length(5);
    });

    it('selects by properties (typed: the string "7" is not the number 7)', async () => {
      expect(await select({ field: 'properties.plan', op: 'eq', value: 'pro' })).to.deep.equal([
        'alice@corp.test',
        'carol@mail.test',
      ]);
      expect(await select({ field: 'properties.seats', op: 'gte', value: 3 })).to.deep.equal([
        'alice@corp.test',
        'carol@mail.test',
      ]);
      expect(await select({ field: 'properties.seats', op: 'eq', value: '7' })).to.deep.equal(['dave@mail.test']);
      expect(await select({ field: 'properties.plan', op: 'neq', value: 'pro' })).to.deep.equal([
        'bob@corp.test',
        'dave@mail.test',
        'erin@corp.test',
      ]);
      expect(await select({ field: 'properties.plan', op: 'exists', value: false })).to.deep.equal(['erin@corp.test']);
      expect(await select({ field: 'properties.plan', op: 'not_in', value: ['pro', 'free'] })).to.deep.equal([
        'dave@mail.test',
        'erin@corp.test',
      ]);
    });

    it('selects by topic subscription, honouring the defaults', async () => {
      expect(await select({ topic: news, subscribed: true })).to.deep.equal([
        'bob@corp.test',
        'carol@mail.test',
        'dave@mail.test',
        'erin@corp.test',
      ]);
      expect(await select({ topic: promos, subscribed: true })).to.deep.equal(['bob@corp.test']);
      expect(await select({ topic: news, subscribed: false })).to.deep.equal(['alice@corp.test']);
    });

    it('combines all / any / not', async () => {
      const filter = {
        all: [
          { field: 'unsubscribed', op: 'eq', value: false },
          {
            any: [
              { field: 'properties.plan', op: 'eq', value: 'pro' },
              { topic: promos, subscribed: true },
            ],
          },
          { not: { field: 'email', op: 'starts_with', value: 'zed' } },
        ],
      };
      expect(await select(filter)).to.deep.equal(['alice@corp.test', 'bob@corp.test']);
      expect(await select({ any: [] })).to.deep.equal([]);
      expect(await select({ all: [] })).to.have.length(5);
    });

    it('treats filter values as data, never as SQL', async () => {
      const hostile = "x' or 1=1; drop table contacts; --";
      expect(await select({ field: 'email', op: 'eq', value: hostile })).to.deep.equal([]);
      expect(await select({ field: 'properties.plan', op: 'contains', value: hostile })).to.deep.equal([]);
      expect(await select({ field: 'first_name', op: 'contains', value: '%' })).to.deep.equal([]);
      expect(await select({ field: 'email', op: 'contains', value: 'ALI' })).to.deep.equal(['alice@corp.test']);
    });

    it('creates, reads, lists, updates, deletes; pages the contacts', async () => {
      const created = await api.request('POST', '/segments', {
        token: admin,
        body: { name: 'Pros', filter: { field: 'properties.plan', op: 'eq', value: 'pro' } },
      });
      expect(created.status).to.equal(201);
      expect(created.json).to.deep.equal({
        object: 'segment',
        id: created.json.id,
        name: 'Pros',
        filter: { field: 'properties.plan', op: 'eq', value: 'pro' },
        created_at: created.json.created_at,
      });
      const id = created.json.id;
      const page1 = await api.request('GET', `/segments/${id}/contacts?limit=1`, { token: admin });
      expect(page1.json).to.deep.include({ object: 'list', has_more: true });
      expect(page1.json.data[0]).to.deep.include({ object: 'contact', email: 'carol@mail.test' });
      const page2 = await api.request('GET', `/segments/${id}/contacts?limit=1&after=${page1.json.data[0].id}`, {
        token: admin,
      });
      expect(page2.json.data.map((c: { email: string }) => c.email)).to.deep.equal(['alice@corp.test']);
      expect(page2.json.has_more).to.equal(false);

      const patched = await api.request('PATCH', `/segments/${id}`, {
        token: admin,
        body: { filter: { topic: promos, subscribed: true } },
      });
      expect(patched.json).to.deep.include({ name: 'Pros', filter: { topic: promos, subscribed: true } });
      const now = await api.request('GET', `/segments/${id}/contacts`, { token: rAdmin.token });
      expect(emails(now).filter((e) => people.some((p) => p.email === e))).to.deep.equal(['bob@corp.test']);
      const listed = await api.request('GET', '/segments', { token: admin });
      expect(listed.json.data.map((s: { id: string }) => s.id)).to.include(id);
      expect((await api.request('GET', `/segments/${id}`, { token: admin })).json.name).to.equal('Pros');
      const del = await api.request('DELETE', `/segments/${id}`, { token: admin });
      expect(del.json).to.deep.equal({ object: 'segment', id, deleted: true });
      expectError(await api.request('GET', `/segments/${id}/contacts`, { token: admin }), 404, 'not_found');
    });

    it('refuses non-ADMIN keys, and restricted keys on changes', async () => {
      const res = await api.request('GET', '/segments', { token: full.token });
      expect(res.status).to.equal(403);
      expect(res.json.error.message).to.contain('ADMIN');
      const r = await api.request('POST', '/segments', { token: rAdmin.token, body: { name: 'x' } });
      expect(r.status).to.equal(403);
      expect(r.json.error.code).to.equal('forbidden_domain');
    });

    it('validates the filter (422 naming the node)', async () => {
      let deep: unknown = { field: 'email', op: 'eq', value: 'a@b.test' };
      for (let i = 0; i < 6; i++) deep = { all: [deep] };
      const cases: [unknown, RegExp][] = [
        [{ filter: {} }, /body\.filter\.field is required/],
        [{ filter: { field: 'color', op: 'eq', value: 'red' } }, /body\.filter\.field must match pattern/],
        [{ filter: { field: 'email', op: 'like', value: 'x' } }, /body\.filter\.op must be one of/],
        [
          { filter: { all: [{ field: 'email', op: 'gt', value: 'x' }] } },
          /body\.filter\.all\.0\.op must be one of .* for field email/,
        ],
        [{ filter: { field: 'unsubscribed', op: 'eq', value: 'yes' } }, /body\.filter\.value must be true or false/],
        [
          { filter: { field: 'created_at', op: 'gt', value: 'yesterday' } },
          /body\.filter\.value must be an ISO 8601 date/,
        ],
        [
          { filter: { field: 'properties.seats', op: 'in', value: [] } },
          /body\.filter\.value must be a non-empty array/,
        ],
        [{ filter: { field: 'properties.a b', op: 'eq', value: 1 } }, /body\.filter\.field must match pattern/],
        [{ filter: { any: [{ topic: news }] } }, /body\.filter\.any\.0\.subscribed is required/],
        [
          { filter: { any: [{ topic: 'top_01JAAAAAAAAAAAAAAAAAAAAAAA', subscribed: true }] } },
          /^body\.filter\.any\.0\.topic: /,
        ],
        [{ filter: { all: [], extra: 1 } }, /body\.filter\.extra is not a known field/],
        [{ filter: deep }, /body\.filter(\.all\.0){5}/],
        [{ name: 'x', filter: { all: [] } }, /./],
      ];
      for (const [body, re] of cases) {
        const withName = { name: 'bad', ...(body as object) };
        const res = await api.request('POST', '/segments', { token: admin, body: withName });
        if ((body as { name?: string }).name === 'x') {
          expect(res.status).to.equal(201);
          continue;
        }
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message, JSON.stringify(body)).to.match(re);
      }
      const bigAny = { any: Array.from({ length: 51 }, () => ({ field: 'email', op: 'eq', value: 'a' })) };
      const big = await api.request('POST', '/segments', { token: admin, body: { name: 'big', filter: bigAny } });
      expectError(big, 422, 'validation_error');
      expect(big.json.error.message).to.match(/body\.filter\.any must NOT have more than 50 items/);
    });
  });
});
