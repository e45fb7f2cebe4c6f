// GET /healthz?verbose=1 (issue 16, item 5) on an install with its own Redis: every dependency
// with its latency, the migrations against the files in sql/, each queue's workers and counts;
// `degraded` for a pending migration or a queue nobody consumes; `unavailable` (503) once the
// private Redis is stopped, while /readyz says no and plain /healthz still says ok.
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { startPrivateRedis, type PrivateRedis } from '../../bench/lib/private-services.js';
import { listMigrations } from '../../shared/db/migrate.js';
import { QUEUE_NAMES } from '../../shared/queues.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { registry } from '../../workers/registry.js';
import { track } from '../helpers/resources.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'health-verbose-token-0123456789';

interface Report {
  status: string;
  checks: Record<string, { status: string; latency_ms: number; error?: string }>;
  migrations: {
    status: string;
    applied?: number;
    files?: number;
    latest?: string;
    pending?: string[];
    unknown?: string[];
  };
  queues:
    | {
        name: string;
        workers: number | null;
        status: string;
        counts: Record<string, number>;
        oldest_waiting_seconds: number;
      }[]
    | { status: string; error: string };
}

describe('GET /healthz?verbose=1', function () {
  this.timeout(60_000);
  let redis: PrivateRedis;
  let api: TestApi;
  let deps: WorkerDeps;
  let workers: Worker[] = [];
  let redisDown = false;
  let cleanup: () => Promise<void>;

  before(async () => {
    redis = await startPrivateRedis({ persist: false });
    cleanup = track('private Redis', () => redis.destroy());
    api = await startApi({ env: { REDIS_URL: redis.url, PROMETHEUS_TOKEN: TOKEN } });
    deps = workerDepsFor(api);
  });

  after(async () => {
    // Connections close cleanly against a Redis that answers.
    if (redisDown) await redis.start();
    await Promise.all(workers.map((w) => w.close()));
    await deps?.close();
    await api?.close();
    await cleanup?.();
  });

  async function report(): Promise<{ status: number; body: Report }> {
    const res = await fetch(`${api.url}/healthz?verbose=1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: (await res.json()) as Report };
  }

  const queues = (r: Report) => {
    if (!Array.isArray(r.queues)) throw new Error(`no queues: ${JSON.stringify(r.queues)}`);
    return new Map(r.queues.map((q) => [q.name, q]));
  };

  it('every queue consumed and every migration applied: ok, with latencies and counts', async () => {
    workers = await Promise.all(registry.map(async (c) => await c.start(deps)));
    // A delayed job shows in its queue's counts (it runs in a minute; the queue is emptied first).
    await api.deps.queues.broadcast.add('batch', { broadcastId: 'bc_later', after: null }, { delay: 60_000 });
    const files = await listMigrations();
    const r = await waitFor('every queue to show its worker', async () => {
      const got = await report();
      return got.body.status === 'ok' ? got : null;
    });
    expect(r.status).to.equal(200);
    for (const dep of ['postgres', 'redis']) {
      expect(r.body.checks[dep]!.status, dep).to.equal('ok');
      expect(r.body.checks[dep]!.latency_ms, dep).to.be.a('number').and.at.least(0).and.below(2000);
    }
    expect(r.body.migrations).to.deep.equal({
      status: 'ok',
      applied: files.length,
      files: files.length,
      latest: `${String(files.at(-1)!.id).padStart(6, '0')}_${files.at(-1)!.name}`,
      pending: [],
      unknown: [],
    });
    const byName = queues(r.body);
    expect([...byName.keys()].sort()).to.deep.equal(Object.values(QUEUE_NAMES).sort());
    for (const q of byName.values()) {
      expect(q.status, q.name).to.equal('ok');
      expect(q.workers, q.name).to.be.at.least(1);
      expect(q.counts).to.have.keys(
        'active',
        'completed',
        'delayed',
        'failed',
        'prioritized',
        'waiting',
        'waiting-children',
      );
    }
    expect(byName.get('broadcast')!.counts.delayed).to.equal(1);
    await api.deps.queues.broadcast.obliterate({ force: true });
  });

  it('a migration missing or unknown to this version: degraded, naming them', async () => {
    const sql = api.deps.sql;
    const [last] = await sql<
      { id: number; name: string }[]
    >`select id, name from tern_migrations order by id desc limit 1`;
    await sql`delete from tern_migrations where id = ${last!.id}`;
    await sql`insert into tern_migrations (id, name) values (999999, 'from_the_future')`;
    try {
      const r = await report();
      expect(r.status).to.equal(200);
      expect(r.body.status).to.equal('degraded');
      expect(r.body.migrations.status).to.equal('pending');
      expect(r.body.migrations.pending).to.deep.equal([`${String(last!.id).padStart(6, '0')}_${last!.name}`]);
      expect(r.body.migrations.unknown).to.deep.equal(['999999_from_the_future']);
    } finally {
      await sql`delete from tern_migrations where id = 999999`;
      await sql`insert into tern_migrations (id, name) values (${last!.id}, ${last!.name})`;
    }
  });

  it('a queue nobody consumes: degraded, that queue no_workers', async () => {
    const inbound = registry.findIndex((c) => c.queue === QUEUE_NAMES.inbound);
    await workers[inbound]!.close();
    const r = await waitFor('the inbound worker to be gone', async () => {
      const got = await report();
      return got.body.status === 'degraded' ? got : null;
    });
    expect(r.status).to.equal(200);
    const byName = queues(r.body);
    expect(byName.get('inbound')).to.include({ status: 'no_workers', workers: 0 });
    expect(byName.get('delivery')!.status).to.equal('ok');
  });

  it('Redis stopped: unavailable (503) with the reason; /readyz 503; plain /healthz 200', async () => {
    await Promise.all(workers.map((w) => w.close()));
    workers = [];
    await redis.kill();
    redisDown = true;
    const r = await report();
    expect(r.status).to.equal(503);
    expect(r.body.status).to.equal('unavailable');
    expect(r.body.checks.redis!.status).to.equal('unavailable');
    expect(r.body.checks.redis!.error).to.be.a('string').and.not.equal('');
    expect(r.body.checks.postgres!.status).to.equal('ok');
    expect(r.body.migrations.status).to.equal('ok');
    expect(r.body.queues).to.deep.equal({ status: 'unknown', error: 'Redis is unavailable' });
    const ready = await fetch(`${api.url}/readyz`);
    expect(ready.status).to.equal(503);
    expect(await ready.json()).to.deep.include({ status: 'unavailable' });
    const plain = await fetch(`${api.url}/healthz`);
    expect([plain.status, await plain.text()]).to.deep.equal([200, '{"status":"ok"}']);
  });
});
