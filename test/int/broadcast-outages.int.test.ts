// A running broadcast through an outage of Postgres and of Redis, with the broadcast sweeper off:
// the send goes on by itself once the store answers again, without waiting for the sweeper. The
// outage is put exactly where it hurts: the test holds the broadcast's row lock, so the batch job
// waits on it inside its transaction; the store goes away; the lock is released. Postgres: the
// worker's connections are cut (a proxy in front of it stops) while the batch waits on the lock.
// Redis: it answers `LOADING` (as Redis does after a restart, until it has read its data back)
// when the committed batch enqueues its deliveries and the next batch. And a send whose first
// job was lost (the web process could not add it, or Redis lost it) goes on as soon as the
// worker's Redis connection comes back, not at the timed sweep two minutes later.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { batchJobId } from '../../shared/broadcast-jobs.js';
import { newId } from '../../shared/ids.js';
import { startBroadcastWorker } from '../../workers/broadcast.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy.js';
import { startRedisProxy, type RedisProxy } from '../helpers/redis-proxy.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

const CONTACTS = 30;
const BATCH = 10;

describe('a running broadcast through an outage of Postgres or Redis', function () {
  this.timeout(120_000);
  let api: TestApi;
  let org: SeededOrg;
  let pgProxy: PgProxy;
  let redisProxy: RedisProxy;
  let wdeps: WorkerDeps;
  let segmentId: string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    await api.deps.sql`update domains set verified_at = now() - interval '60 days'`;
    const rows = Array.from({ length: CONTACTS }, (_, i) => ({
      id: newId('ct'),
      org_id: org.organization.id,
      email: `c${i}@list.test`,
      automations_seen_at: new Date(),
    }));
    await api.deps.sql`insert into contacts ${api.deps.sql(rows)}`;
    const segment = await api.request('POST', '/segments', {
      token: org.key.token,
      body: { name: 'list', filter: { field: 'email', op: 'ends_with', value: '@list.test' } },
    });
    segmentId = segment.json.id as string;
    const db = new URL(api.db.url);
    pgProxy = await startPgProxy({ host: db.hostname, port: Number(db.port || 5432) });
    const redis = new URL(api.config.redisUrl);
    redisProxy = await startRedisProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    // The worker reaches both stores through the proxies; no pacing: every batch follows the last.
    wdeps = workerDepsFor(api, {
      DATABASE_URL: pgProxy.url(api.db.name),
      REDIS_URL: `${redisProxy.url}${redis.pathname}`,
      BROADCAST_QUEUE_MAX: '0',
    });
  });
  after(async () => {
    await wdeps.close();
    await redisProxy.close();
    await pgProxy.close();
    await api.close();
  });

  /**
   * Sends a broadcast and holds its row lock before the worker starts, so that the first batch
   * job waits on it; runs `outage` (which breaks the store and releases the lock); resolves with
   * the broadcast's id and the worker, which the caller closes.
   */
  async function sendThrough(
    subject: string,
    outage: (release: () => void) => Promise<void>,
  ): Promise<{ id: string; worker: Worker }> {
    const created = await api.request('POST', '/broadcasts', {
      token: org.key.token,
      body: { from: 'news@acme.test', subject, text: subject, segment_id: segmentId },
    });
    const id = created.json.id as string;
    const sent = await api.request('POST', `/broadcasts/${id}/send`, { token: org.key.token, body: {} });
    expect(sent.json.status).to.equal('sending');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    const holder = api.deps.sql.begin(async (tx) => {
      await tx`select 1 from broadcasts where id = ${id} for update`;
      locked();
      await released;
    });
    await holding;
    const worker = startBroadcastWorker(wdeps, { batchSize: BATCH, sweepEveryMs: 0 });
    try {
      await waitFor('the first batch to wait on the broadcast row', async () => {
        const [row] = await api.deps.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`;
        return row!.n > 0;
      });
      await outage(release);
    } catch (err) {
      release();
      await worker.close();
      throw err;
    } finally {
      await holder;
    }
    return { id, worker };
  }

  /** The broadcast ends `sent`, and every message it stored has its delivery job. */
  async function expectCompleted(id: string): Promise<void> {
    await waitFor(
      'the broadcast to finish without the sweeper',
      async () => (await api.request('GET', `/broadcasts/${id}`, { token: org.key.token })).json.status === 'sent',
      40_000,
    );
    const b = (await api.request('GET', `/broadcasts/${id}`, { token: org.key.token })).json;
    expect(b.counts.sent).to.equal(CONTACTS);
    const emails = await api.deps.sql<{ id: string }[]>`
      select email_id as id from broadcast_recipients where broadcast_id = ${id} and email_id is not null`;
    expect(emails).to.have.length(CONTACTS);
    const jobs = await Promise.all(emails.map((e) => api.deps.queues['delivery-broadcast'].getJob(e.id)));
    expect(jobs.filter((j) => !j).length, 'messages without a delivery job').to.equal(0);
  }

  it('Postgres away while a batch runs: the batch waits for it and the send goes on', async () => {
    const { id, worker } = await sendThrough('Postgres', async (release) => {
      await pgProxy.down();
      release();
      await sleep(1000); // the outage lasts: time passing is the subject here
      await pgProxy.up();
    });
    try {
      await expectCompleted(id);
    } finally {
      await worker.close();
    }
  });

  it('Redis loading its data after a restart when a batch enqueues: the enqueue waits and the send goes on', async () => {
    const { id, worker } = await sendThrough('Redis', async (release) => {
      redisProxy.loading = true;
      release();
      await sleep(1500); // the batch commits and meets LOADING; the outage lasts
      redisProxy.loading = false;
    });
    try {
      await expectCompleted(id);
    } finally {
      await worker.close();
    }
  });

  it('a send whose first job was lost goes on when Redis comes back, without the timed sweep', async () => {
    const created = await api.request('POST', '/broadcasts', {
      token: org.key.token,
      body: { from: 'news@acme.test', subject: 'Lost', text: 'lost', segment_id: segmentId },
    });
    const id = created.json.id as string;
    await api.request('POST', `/broadcasts/${id}/send`, { token: org.key.token, body: {} });
    // As if the web process's add had failed (BROADCAST_ENQUEUE_FAILED) or Redis had lost it.
    await api.deps.queues.broadcast.remove(batchJobId(id, null));
    // The timed sweep is ten minutes away: only Redis coming back can bring the send back.
    const worker = startBroadcastWorker(wdeps, { batchSize: BATCH, sweepEveryMs: 10 * 60_000 });
    try {
      redisProxy.cut();
      await expectCompleted(id);
    } finally {
      await worker.close();
    }
  });
});
