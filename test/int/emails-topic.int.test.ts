// `topic_id` of a send names one of the key's organization's topics: an unknown id, or another
// organization's, is 422 validation_error naming the field (POST /emails, each batch item, and
// broadcasts), and nothing is stored.
import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('topic_id of a send', () => {
  let api: TestApi;
  let org: SeededOrg;
  let other: SeededOrg;
  let own: string;
  let foreign: string;

  const topic = async (o: SeededOrg, name: string) =>
    (
      await api.request('POST', '/topics', {
        token: o.key.token,
        body: { name, default_subscription: 'opt_in' },
      })
    ).json.id as string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
    await unthrottle(api, org.organization.id);
    own = await topic(org, 'News');
    foreign = await topic(other, 'Their news');
  });
  after(async () => api.close());

  const send = { from: 'hello@acme.test', to: 'ann@example.net', subject: 'Hi', text: 'x' };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    api.request('POST', path, { token: org.key.token, body, headers });
  const count = async () => (await api.deps.sql<{ n: number }[]>`select count(*)::int as n from emails`)[0]!.n;

  it('POST /emails: stores its own topic, refuses an unknown or a foreign one (422 body.topic_id)', async () => {
    const ok = await post('/emails', { ...send, topic_id: own });
    expect(ok.status, ok.text).to.equal(200);
    const [row] = await api.deps.sql<{ topic_id: string }[]>`select topic_id from emails where id = ${ok.json.id}`;
    expect(row!.topic_id).to.equal(own);
    const before = await count();
    for (const id of [foreign, 'top_01J00000000000000000000000', 'nope']) {
      const res = await post('/emails', { ...send, topic_id: id });
      expect(res.status, id).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.equal(`body.topic_id: "${id}" is not a topic of this organization`);
    }
    expect(await count()).to.equal(before);
  });

  it('POST /emails/batch: names the item (strict), or lists it and keeps the others (permissive)', async () => {
    const items = [
      { ...send, topic_id: own },
      { ...send, topic_id: foreign },
    ];
    const before = await count();
    const strict = await post('/emails/batch', items);
    expect(strict.status).to.equal(422);
    expect(strict.json.error.message).to.equal(`body[1].topic_id: "${foreign}" is not a topic of this organization`);
    expect(await count()).to.equal(before);
    const permissive = await post('/emails/batch', items, { 'x-batch-validation': 'permissive' });
    expect(permissive.status).to.equal(200);
    expect(permissive.json.data).to.have.length(1);
    expect(permissive.json.errors).to.deep.equal([
      { index: 1, message: `body[1].topic_id: "${foreign}" is not a topic of this organization` },
    ]);
  });

  it('POST /broadcasts: refuses a foreign topic too', async () => {
    const segment = await api.request('POST', '/segments', { token: org.key.token, body: { name: 'All' } });
    expect(segment.status, segment.text).to.equal(201);
    const res = await post('/broadcasts', {
      from: 'hello@acme.test',
      subject: 'Hi',
      text: 'x',
      segment_id: segment.json.id,
      topic_id: foreign,
    });
    expect(res.status).to.equal(422);
    expect(res.json.error.message).to.contain('body.topic_id');
  });
});
