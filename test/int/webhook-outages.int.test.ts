// Webhook deliveries through outages of a private Postgres and Redis (DESIGN §18: a restart or a
// flush is recovered within seconds), with the timed sweeper out of the way (an hour apart), so
// that what brings the deliveries back is the worker itself:
//   - a delivery job that meets Postgres away waits for it in the job instead of failing;
//   - a Redis emptied under a running worker (FLUSHALL: the deliveries' jobs gone) is swept at
//     once, found by the worker's sentinel key.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import {
  startPrivatePostgres,
  startPrivateRedis,
  type PrivatePostgres,
  type PrivateRedis,
} from '../../bench/lib/private-services.js';
import { loadConfig } from '../../shared/config.js';
import type { Sql } from '../../shared/db/pool.js';
import { insertWebhook } from '../../shared/db/webhooks.js';
import { publishEvents } from '../../shared/events.js';
import { secretBox } from '../../shared/secrets.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps, type WorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { startWebhookFanout } from '../../workers/webhook-fanout.js';
import { privateDatabase } from '../helpers/db.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { TEST_SECRET_KEY } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';

const EVENTS = 20;
const NO_TIMED_SWEEP = { sweepIntervalMs: 3_600_000, schedule: [150, 300] };

describe('webhook delivery through Postgres and Redis outages', function () {
  this.timeout(180_000);
  let pg: PrivatePostgres;
  let redis: PrivateRedis;
  let sql: Sql;
  let deps: WorkerDeps;
  let org: SeededOrg;
  let receiver: Receiver;
  const workers: Worker[] = [];
  let untrack: () => Promise<void>;

  before(async () => {
    pg = await startPrivatePostgres();
    redis = await startPrivateRedis({ persist: true });
    receiver = await startReceiver();
    untrack = track('private services', async () => {
      await Promise.all(workers.map((w) => w.close()));
      await deps?.close();
      await sql?.end({ timeout: 5 });
      await receiver.close();
      await redis.destroy();
      await pg.destroy();
    });
    sql = await privateDatabase(pg);
    org = await seedOrg(sql, { domains: [{ name: 'acme.test' }] });
    const config = loadConfig({
      DATABASE_URL: pg.urlFor('tern'),
      REDIS_URL: redis.url,
      REDIS_PREFIX: 'whoutage',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      SECRET_KEY: TEST_SECRET_KEY,
    });
    await insertWebhook(sql, secretBox(config), {
      orgId: org.organization.id,
      url: `${receiver.url}/hooks`,
      events: ['email.delivered'],
      description: null,
      secret: 'whsec_outage',
    });
    deps = createWorkerDeps(config, createLogger(config.logLevel, 'webhook-outage-test'));
    workers.push(startWebhookFanout(deps));
  });
  after(async () => {
    await untrack();
  });

  /**
   * Publishes `EVENTS` events and waits until their deliveries are stored (and their jobs
   * enqueued); returns the deliveries' ids.
   */
  async function publish(): Promise<string[]> {
    const email = await seedEmail(sql, { orgId: org.organization.id, domainId: org.domains['acme.test']!.id });
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) ids.push((await seedEvent(sql, email, 'email.delivered', 'ann@example.com')).id);
    await publishEvents(sql, deps.queues, ids);
    return await waitFor('the deliveries stored', async () => {
      const rows = await sql<{ id: string }[]>`select id from webhook_deliveries where event_id in ${sql(ids)}`;
      return rows.length === EVENTS && rows.map((r) => r.id);
    });
  }

  /** How many of the deliveries reached the receiver (by their delivery id header). */
  const receivedOf = (ids: string[]) =>
    new Set(receiver.received.map((r) => r.headers['tern-delivery-id']).filter((id) => ids.includes(String(id)))).size;

  it('a delivery job that meets Postgres away waits for it and delivers once it is back', async () => {
    const ids = await publish();
    await pg.stopImmediate();
    // The jobs start while Postgres is away.
    workers.push(startWebhookDelivery(deps, NO_TIMED_SWEEP));
    await sleep(3000);
    await pg.start();
    await waitFor(`all ${EVENTS} events at the receiver`, () => receivedOf(ids) === EVENTS, 60_000);
  });

  it('a Redis emptied under a running worker has its deliveries swept back at once', async () => {
    const delivery = workers.at(-1)!;
    await delivery.pause();
    const ids = await publish();
    const admin = new Redis(redis.url);
    await admin.flushall();
    admin.disconnect();
    await delivery.resume();
    await waitFor(`all ${EVENTS} events at the receiver`, () => receivedOf(ids) === EVENTS, 60_000);
    expect(receivedOf(ids)).to.equal(EVENTS);
  });
});
