// The worker process through outages of its own private Postgres and Redis (issue 11 items 7
// and 8), started by this test on free loopback ports (never the shared services): under a load
// of sends, Postgres is stopped with `pg_ctl -m immediate stop` and started again, and Redis is
// killed and restarted; every message is delivered exactly once and the worker process never
// exits (no uncaught TypeError from the Postgres client, no slot left held).
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { startMessageSink, type MessageSink } from '../../bench/chaos/sink.js';
import {
  startPrivatePostgres,
  startPrivateRedis,
  type PrivatePostgres,
  type PrivateRedis,
} from '../../bench/lib/private-services.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/pool.js';
import { createQueues, type Queues } from '../../shared/queues.js';
import { closeRedis, createRedis, type Redis } from '../../shared/redis.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { privateDatabase } from '../helpers/db.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { sleep, waitFor } from '../helpers/wait.js';

const PREFIX = 'outage';
const N = 400;

describe('delivery worker through Postgres and Redis outages', function () {
  this.timeout(180_000);
  let pg: PrivatePostgres;
  let redis: PrivateRedis;
  let sink: MessageSink;
  let sql: Sql;
  let bull: Redis;
  let queues: Queues;
  let org: SeededOrg;
  let worker: ChildProcess;
  let output = '';
  let exited: { code: number | null; signal: string | null } | null = null;
  let untrack: () => Promise<void>;

  before(async () => {
    pg = await startPrivatePostgres();
    redis = await startPrivateRedis({ persist: true });
    sink = await startMessageSink({ delayMs: 5 });
    untrack = track('private services', async () => {
      if (worker && worker.exitCode === null && worker.signalCode === null) {
        const gone = new Promise((r) => worker.once('exit', r));
        worker.kill('SIGKILL');
        await gone;
      }
      await closeRedis(bull);
      await queues?.close();
      await sql?.end({ timeout: 5 });
      await sink.close();
      await redis.destroy();
      await pg.destroy();
    });
    sql = await privateDatabase(pg);
    org = await seedOrg(sql, { domains: [{ name: 'acme.test' }] });
    await sql`update domains set verified_at = now() - interval '60 days'`;
    await giveDkimKey(sql, org.domains['acme.test']!.id);
    bull = createRedis(redis.url, 'bullmq', 'outage-test');
    queues = createQueues(bull, redisKeys(PREFIX).bullPrefix);
    worker = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: pg.urlFor('tern'),
        REDIS_URL: redis.url,
        REDIS_PREFIX: PREFIX,
        WORKER_QUEUES: 'delivery',
        SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}`,
        SECRET_KEY: 'outage-test-secret-0123456789abcdef0123',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    worker.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    worker.once('exit', (code, signal) => (exited = { code, signal }));
  });
  after(async () => {
    await untrack();
  });

  /** Stores `n` one-recipient messages and enqueues them as the API does; returns their Message-IDs. */
  async function send(n: number, tag: string): Promise<string[]> {
    const ids = Array.from({ length: n }, () => newId('em'));
    const orgId = org.organization.id;
    const domainId = org.domains['acme.test']!.id;
    await sql`
      with e as (
        insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, subject, text,
                            message_id, status)
        select id, ${orgId}, ${domainId}, 'live', 'a@acme.test', 'a@acme.test', array[${tag} || '@dest.test'],
               's', 't', id || '@acme.test', 'queued'
        from unnest(${ids}::text[]) id returning id)
      insert into email_recipients (id, email_id, org_id, field, address, email, domain)
      select 'rcp_' || substr(e.id, 4), e.id, ${orgId}, 'to', ${tag} || '@dest.test', ${tag} || '@dest.test', 'dest.test'
      from e`;
    await queues.delivery.addBulk(
      ids.map((emailId) => ({ name: 'email', data: { emailId }, opts: { jobId: emailId } })),
    );
    return ids.map((id) => `${id}@acme.test`.toLowerCase());
  }

  function expectExactlyOnce(messageIds: string[]): void {
    const missing = messageIds.filter((m) => !sink.accepted.has(m));
    const twice = messageIds.filter((m) => (sink.accepted.get(m) ?? 0) > 1);
    expect({ missing: missing.length, duplicates: twice.length }).to.deep.equal({ missing: 0, duplicates: 0 });
  }

  const deliveredOf = (ids: string[]) => ids.filter((m) => sink.accepted.has(m)).length;

  it('survives `pg_ctl -m immediate stop` under load and delivers everything exactly once after the restart', async () => {
    const ids = await send(N, 'pg');
    await waitFor('a fifth of the load delivered', async () => deliveredOf(ids) >= N / 5, 60_000);
    await pg.stopImmediate();
    await sleep(3000);
    expect(exited, `the worker exited during the outage:\n${output.slice(-2000)}`).to.equal(null);
    await pg.start();
    await waitFor(`all ${N} delivered after the restart`, async () => deliveredOf(ids) === N, 120_000);
    // The sink's 250 comes before the worker records it: the last outcome lands a moment later.
    await waitFor(`all ${N} recorded as delivered`, async () => {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from email_recipients where email = 'pg@dest.test' and status = 'delivered'`;
      return row!.n === N;
    });
    expectExactlyOnce(ids);
    expect(exited, output.slice(-2000)).to.equal(null);
    expect(output).not.to.match(/TypeError|WORKER_UNCAUGHT_EXCEPTION/);
  });

  it('keeps delivering after Redis is killed and restarted mid-load (no connection slot left held)', async () => {
    const ids = await send(N, 'redis');
    await waitFor('a fifth of the load delivered', async () => deliveredOf(ids) >= N / 5, 60_000);
    await redis.kill();
    await sleep(4000);
    await redis.start();
    await waitFor(`all ${N} delivered after Redis came back`, async () => deliveredOf(ids) === N, 120_000);
    expectExactlyOnce(ids);
    expect(exited, output.slice(-2000)).to.equal(null);
  });
});
