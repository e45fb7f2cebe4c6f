import { expect } from 'chai';
import { requestHash } from '../../api/middleware/idempotency.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('POST /emails/batch and Idempotency-Key', () => {
  let api: TestApi;
  let org: SeededOrg;
  let send: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
  });
  after(async () => api.close());

  const item = (i: number) => ({ from: 'hi@acme.test', to: [`u${i}@example.com`], subject: `n${i}`, text: 'x' });
  const batch = (body: unknown, headers: Record<string, string> = {}, token = send.token) =>
    api.request('POST', '/emails/batch', { token, body, headers });
  const count = async () => (await api.deps.sql`select count(*)::int as n from emails`)[0]!.n as number;

  describe('batch', () => {
    it('stores 100 messages and enqueues one job each', async () => {
      const res = await batch(Array.from({ length: 100 }, (_, i) => item(i)));
      expect(res.status).to.equal(200);
      expect(Object.keys(res.json)).to.deep.equal(['data']);
      expect(res.json.data).to.have.length(100);
      const ids = res.json.data.map((d: { id: string }) => d.id);
      const rows = await api.deps.sql`select id, subject from emails where id = any(${ids}) order by id`;
      expect(rows).to.have.length(100);
      const rcpts = await api.deps.sql`select count(*)::int as n from email_recipients where email_id = any(${ids})`;
      expect(rcpts[0]!.n).to.equal(100);
      const jobs = await Promise.all([ids[0], ids[99]].map((id: string) => api.deps.queues.delivery.getJob(id)));
      expect(jobs.map((j) => j?.data.emailId)).to.deep.equal([ids[0], ids[99]]);
      expect(await api.deps.queues.delivery.getJobCountByTypes('waiting', 'prioritized')).to.be.at.least(100);
    });

    it('strict (default): one bad item → 422 naming its index, nothing stored', async () => {
      const before = await count();
      const res = await batch([item(1), { ...item(2), to: 'broken' }, item(3)]);
      expect(res.status).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.match(/^body\[1\]\.to/);
      expect(await count()).to.equal(before);
    });

    it('permissive: valid items stored, errors listed by index', async () => {
      const res = await batch([item(1), { ...item(2), from: 'x@elsewhere.test' }, item(3), { ...item(4), bogus: 1 }], {
        'x-batch-validation': 'permissive',
      });
      expect(res.status).to.equal(200);
      expect(res.json.data).to.have.length(2);
      expect(res.json.errors.map((e: { index: number }) => e.index)).to.deep.equal([1, 3]);
      expect(res.json.errors[1].message).to.contain('body[3].bogus is not a known field');
    });

    it('refuses an empty, oversize or non-array batch and a bad validation header', async () => {
      expectError(await batch([]), 422, 'validation_error');
      const big = await batch(Array.from({ length: 101 }, (_, i) => item(i)));
      expectError(big, 422, 'validation_error');
      expect(big.json.error.message).to.contain('100');
      expectError(await batch(item(1)), 422, 'validation_error');
      const hdr = await batch([item(1)], { 'x-batch-validation': 'lenient' });
      expectError(hdr, 422, 'validation_error');
      expect(hdr.json.error.message).to.contain('x-batch-validation');
    });

    it('restricted key: strict → 403 forbidden_domain naming the index', async () => {
      const k = await org.mint({ permission: 'SEND', domains: ['beta.test'] });
      const res = await batch([{ ...item(1), from: 'a@beta.test' }, item(2)], {}, k.token);
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden_domain');
      expect(res.json.error.message).to.contain('body[1]');
    });
  });

  describe('Idempotency-Key', () => {
    const body = { from: 'hi@acme.test', to: 'x@example.com', subject: 'once', text: 'x' };
    const sendOnce = (key: string, b: unknown = body, token = send.token) =>
      api.request('POST', '/emails', { token, body: b, headers: { 'idempotency-key': key } });

    it('replays the first response for the same key and body', async () => {
      const first = await sendOnce('k-1');
      expect(first.status).to.equal(200);
      const again = await sendOnce('k-1');
      expect(again.status).to.equal(200);
      expect(again.json).to.deep.equal(first.json);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      const rows = await api.deps.sql`select count(*)::int as n from emails where subject = 'once'`;
      expect(rows[0]!.n).to.equal(1);
    });

    it('409 idempotency_conflict for the same key with another body', async () => {
      await sendOnce('k-2');
      const res = await sendOnce('k-2', { ...body, subject: 'other' });
      expect(res.status).to.equal(409);
      expect(res.json.error.code).to.equal('idempotency_conflict');
    });

    it('is per API key', async () => {
      const other = await org.mint({ permission: 'SEND' });
      const a = await sendOnce('k-3');
      const b = await sendOnce('k-3', body, other.token);
      expect(b.status).to.equal(200);
      expect(b.json.id).to.not.equal(a.json.id);
    });

    it('releases the key when the request fails so the client can retry', async () => {
      const bad = await sendOnce('k-4', { ...body, to: 'nope' });
      expectError(bad, 422, 'validation_error');
      const fixed = await sendOnce('k-4', body);
      expect(fixed.status).to.equal(200);
    });

    it('refuses a key longer than 256 characters', async () => {
      const res = await sendOnce('k'.repeat(257));
      expectError(res, 422, 'validation_error');
      expect(res.json.error.message).to.contain('Idempotency-Key');
    });

    it('two concurrent requests: one stored, the other in progress or the same replay', async () => {
      const [a, b] = await Promise.all([sendOnce('k-5'), sendOnce('k-5')]);
      const statuses = [a.status, b.status].sort();
      const ok = [a, b].filter((r) => r.status === 200);
      if (statuses[0] === 200 && statuses[1] === 200) {
        expect(a.json.id).to.equal(b.json.id);
      } else {
        expect(statuses).to.deep.equal([200, 409]);
        const conflict = [a, b].find((r) => r.status === 409)!;
        expect(conflict.json.error.code).to.equal('idempotency_in_progress');
      }
      const rows = await api.deps.sql`select id from emails where id = ${ok[0]!.json.id}`;
      expect(rows).to.have.length(1);
    });

    it('answers 409 in progress while the first request holds the key (other web process)', async () => {
      const second = await startApi({ db: api.db, prefix: api.config.redisPrefix });
      try {
        const key = api.deps.redisKeys.idempotency(send.id, 'k-6');
        const hash = requestHash('POST', '/api/v1/emails', body);
        await api.deps.redis.set(key, JSON.stringify({ state: 'in_flight', hash, token: 't' }), 'EX', 60);
        const res = await second.request('POST', '/emails', {
          token: send.token,
          body,
          headers: { 'idempotency-key': 'k-6' },
        });
        expect(res.status).to.equal(409);
        expect(res.json.error.code).to.equal('idempotency_in_progress');
        const other = await second.request('POST', '/emails', {
          token: send.token,
          body: { ...body, subject: 'different' },
          headers: { 'idempotency-key': 'k-6' },
        });
        expect(other.json.error.code).to.equal('idempotency_conflict');
      } finally {
        await second.close();
      }
    });

    it('works on /emails/batch and replays across web processes', async () => {
      const second = await startApi({ db: api.db, prefix: api.config.redisPrefix });
      try {
        const b = [item(1), item(2)];
        const first = await batch(b, { 'idempotency-key': 'b-1' });
        expect(first.status).to.equal(200);
        const replay = await second.request('POST', '/emails/batch', {
          token: send.token,
          body: b,
          headers: { 'idempotency-key': 'b-1' },
        });
        expect(replay.status).to.equal(200);
        expect(replay.json).to.deep.equal(first.json);
      } finally {
        await second.close();
      }
    });
  });
});
