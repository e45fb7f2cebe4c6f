// What POST /emails and /emails/batch answer says was stored (issue 11 item 12): 503 means
// nothing was stored, a success means stored and delivered exactly once, and 504 outcome_unknown
// is the one answer that does not know. The web process reaches Postgres through a proxy that
// cuts the connection right after a COMMIT or right before a statement, or refuses connections;
// Redis failures are a queue or an idempotency store that throws.
import { expect } from 'chai';
import { startSweeper } from '../../workers/delivery/schedule.js';
import { startOutcomeStack, type OutcomeStack } from '../helpers/outcome-stack.js';
import { waitFor } from '../helpers/wait.js';

describe('what a send’s answer says was stored', function () {
  this.timeout(120_000);
  let s: OutcomeStack;

  before(async () => {
    s = await startOutcomeStack();
  });
  after(async () => s.close());
  // A test that fails half-way must not leave the next ones without Postgres.
  afterEach(async () => s.proxy.up());

  const message = (subject: string, to = 'ann@dest.test') => ({ from: 'hi@acme.test', to: [to], subject, text: 'x' });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    s.api.request('POST', '/emails', { token: s.send.token, body, headers });
  const stored = async (subject: string) =>
    (await s.db.sql<{ id: string }[]>`select id from emails where subject = ${subject} order by id`).map((r) => r.id);

  it('a connection cut after COMMIT: the insert runs again, the answer is 200, stored and delivered once', async () => {
    const subject = s.marker();
    const cut = s.proxy.breakAfterCommit(subject);
    const res = await post(message(subject));
    await cut;
    expect(res.status, res.text).to.equal(200);
    expect(await stored(subject)).to.deep.equal([res.json.id]);
    await s.deliveredOnce([res.json.id]);
  });

  it('a batch cut after COMMIT: 200, each of its 100 messages stored and delivered once', async () => {
    const subject = s.marker();
    const cut = s.proxy.breakAfterCommit(subject);
    const items = Array.from({ length: 100 }, (_, i) => message(subject, `b${i}@dest.test`));
    const res = await s.api.request('POST', '/emails/batch', { token: s.send.token, body: items });
    await cut;
    expect(res.status, res.text).to.equal(200);
    const ids = res.json.data.map((d: { id: string }) => d.id);
    expect(await stored(subject)).to.deep.equal([...ids].sort());
    await s.deliveredOnce(ids);
  });

  it('Postgres refusing connections: 503 unavailable and nothing stored', async () => {
    const subject = s.marker();
    await s.proxy.down();
    try {
      const one = await post(message(subject));
      expect(one.status).to.equal(503);
      expect(one.json.error.code).to.equal('unavailable');
      const batch = await s.api.request('POST', '/emails/batch', { token: s.send.token, body: [message(subject)] });
      expect(batch.status).to.equal(503);
      expect(batch.json.error.code).to.equal('unavailable');
    } finally {
      await s.proxy.up();
    }
    expect(await stored(subject)).to.deep.equal([]);
  });

  for (const when of ['after-commit', 'before-send'] as const) {
    it(`Postgres gone for the whole window (cut ${when}): 504 naming the id; the same Idempotency-Key stores it once`, async () => {
      const subject = s.marker();
      const key = { 'Idempotency-Key': subject };
      const cut =
        when === 'after-commit'
          ? s.proxy.breakAfterCommit(subject, { thenDown: true })
          : s.proxy.breakBeforeSend(subject, { thenDown: true });
      const first = await post(message(subject), key);
      await cut;
      expect(first.status, first.text).to.equal(504);
      expect(first.json.error.code).to.equal('outcome_unknown');
      const id = /Email (em_\w+) may or may not have been stored/.exec(first.json.error.message)?.[1];
      expect(id, first.json.error.message).to.be.a('string');
      expect(await stored(subject)).to.deep.equal(when === 'after-commit' ? [id] : []);

      await s.proxy.up();
      const retry = await post(message(subject), key);
      expect(retry.status, retry.text).to.equal(200);
      expect(retry.json).to.deep.equal({ id });
      expect(await stored(subject)).to.deep.equal([id]);
      const replay = await post(message(subject), key);
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(replay.json).to.deep.equal({ id });
      await s.deliveredOnce([id!]);
    });
  }

  it('504 on a batch names every item’s id; the retry with the key reuses them by index', async () => {
    const subject = s.marker();
    const key = { 'Idempotency-Key': subject, 'x-batch-validation': 'permissive' };
    const items = [
      message(subject, 'p0@dest.test'),
      { ...message(subject), from: 'x@nowhere.test' },
      message(subject, 'p2@dest.test'),
    ];
    const cut = s.proxy.breakAfterCommit(subject, { thenDown: true });
    const first = await s.api.request('POST', '/emails/batch', { token: s.send.token, body: items, headers: key });
    await cut;
    expect(first.status, first.text).to.equal(504);
    const named = first.json.error.message.match(/em_\w+/g) as string[];
    await s.proxy.up();
    const retry = await s.api.request('POST', '/emails/batch', { token: s.send.token, body: items, headers: key });
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.json.data.map((d: { id: string }) => d.id)).to.deep.equal(named.slice(0, 2));
    expect(retry.json.errors.map((e: { index: number }) => e.index)).to.deep.equal([1]);
    expect(await stored(subject)).to.deep.equal([...named.slice(0, 2)].sort());
  });

  it('Redis refusing the job after the insert: 200, the job added as soon as Redis answers, delivered once', async () => {
    const queue = s.api.deps.queues.delivery;
    const add = queue.add.bind(queue);
    let refused = 0;
    queue.add = (async (...args: Parameters<typeof add>) => {
      if (refused++ < 3) throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
      return await add(...args);
    }) as typeof queue.add;
    try {
      const res = await post(message(s.marker()));
      expect(res.status).to.equal(200);
      // Added by the web process's retry, not left to the sweeper (which does not run here).
      await waitFor('the job', async () => (await queue.getJob(res.json.id)) !== undefined, 15_000);
      await s.deliveredOnce([res.json.id]);
    } finally {
      queue.add = add;
    }
  });

  it('a job never added: the delivery sweeper adds it and the message is delivered once', async () => {
    const queue = s.api.deps.queues.delivery;
    // `enqueue`, not `add`: the web process's background retry calls `enqueue` before the answer
    // is sent, while `add` is reached only after a Redis round trip (it could meet the restored one).
    const enqueue = queue.enqueue.bind(queue);
    let calls = 0;
    queue.enqueue = (async () => {
      calls++;
      throw new Error('refused');
    }) as typeof queue.enqueue;
    let id: string;
    try {
      const res = await post(message(s.marker()));
      expect(res.status).to.equal(200);
      id = res.json.id;
      // The first try and the background one, which gives up at once (the refusal is not transient).
      expect(calls).to.equal(2);
    } finally {
      queue.enqueue = enqueue;
    }
    expect(await queue.getJob(id)).to.equal(undefined);
    await s.db.sql`update emails set created_at = now() - interval '1 minute' where id = ${id}`;
    // This sweep, or the worker's own scheduled one if it comes first, adds the job: the web
    // process gave up on it (a refusal that is not transient is not retried), so only a sweep can.
    await startSweeper.sweep(s.wdeps, 30);
    await s.deliveredOnce([id]);
    // No job under the id the web process would have used: the delivery came from a sweep's job.
    expect(await queue.getJob(id)).to.equal(undefined);
  });

  it('the Idempotency-Key record failing after the insert: 200, stored once, the record written when Redis answers', async () => {
    const redis = s.api.deps.redis;
    // Defines the script command on the client, so that it can be made to fail once.
    await post(message(s.marker()), { 'Idempotency-Key': s.marker() });
    const swap = redis.ternIdemSwap.bind(redis);
    let failures = 0;
    redis.ternIdemSwap = (async (...args: Parameters<typeof swap>) => {
      if (failures++ < 2) throw new Error('Connection is closed.');
      return await swap(...args);
    }) as typeof swap;
    try {
      const subject = s.marker();
      const res = await post(message(subject), { 'Idempotency-Key': subject });
      expect(res.status).to.equal(200);
      const replay = await waitFor('a replay', async () => {
        const r = await post(message(subject), { 'Idempotency-Key': subject });
        return r.status === 200 ? r : null;
      });
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(replay.json).to.deep.equal(res.json);
      expect(await stored(subject)).to.deep.equal([res.json.id]);
    } finally {
      redis.ternIdemSwap = swap;
    }
  });
});
