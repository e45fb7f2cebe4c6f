import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { QUEUE_NAMES, TAKEOVER_LOCKS } from '../../shared/queues.js';
import { fanOutEvent } from '../../workers/webhook-fanout.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { sweepDeliveries } from '../../workers/webhook-sweeper.js';
import { track } from '../helpers/resources.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('webhook durability', () => {
  let s: WebhookStack;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    s = await startWebhookStack({ workers: false, respond: (_r, n) => (n === 1 ? 'hang' : 200) });
  });
  after(async () => {
    for (const close of closers) await close();
    await s.close();
  });

  async function startChild(locks: 'short' | 'production' = 'short'): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/webhook-worker-child.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: s.api.db.url,
        REDIS_URL: s.api.config.redisUrl,
        REDIS_PREFIX: s.api.config.redisPrefix,
        SECRET_KEY: s.api.config.secretKey,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_CHILD_LOCKS: locks,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    closers.push(
      track(`child ${child.pid}`, async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }),
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
    });
    return child;
  }

  async function newDelivery(
    path: string,
    type: 'email.delivered' | 'email.sent' | 'email.opened' | 'email.clicked',
  ): Promise<string> {
    await s.createWebhook({ url: `${s.receiver.url}${path}`, events: [type] });
    const email = await seedEmail(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
    });
    const ev = await seedEvent(s.api.deps.sql, email, type, 'ann@example.com');
    const deps = workerDepsFor(s.api);
    try {
      expect(await fanOutEvent(deps, ev.id)).to.equal(1);
    } finally {
      await deps.close();
    }
    const [d] = await s.api.deps.sql<{ id: string }[]>`select id from webhook_deliveries where event_id = ${ev.id}`;
    return d!.id;
  }

  const state = async (id: string) =>
    (
      await s.api.deps.sql<{ status: string; attempts: number }[]>`
      select status, attempts from webhook_deliveries where id = ${id}`
    )[0]!;

  it('a worker killed mid-attempt neither loses nor forks the delivery', async () => {
    const id = await newDelivery('/kill', 'email.delivered');
    const first = await startChild();
    const [held] = await s.receiver.waitForRequests(1, (r) => r.path === '/kill');
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const second = await startChild();
    try {
      const got = await s.receiver.waitForRequests(2, (r) => r.path === '/kill');
      expect(got[1]!.headers['tern-delivery-id']).to.equal(id);
      expect(held!.headers['tern-delivery-id']).to.equal(id);
      expect(got[1]!.raw.equals(held!.raw)).to.equal(true);
      const final = await waitFor('the delivery to succeed', async () =>
        (await state(id)).status === 'succeeded' ? state(id) : null,
      );
      expect(final.attempts).to.equal(2);
      const count = await s.api.deps
        .sql`select 1 from webhook_deliveries where event_id = (select event_id from webhook_deliveries where id = ${id})`;
      expect(count).to.have.length(1);
    } finally {
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
    }
  });

  it('with the worker’s own lock settings, a killed worker’s attempt is made again within seconds, not a minute', async function () {
    // BullMQ's defaults (30 s lock, 30 s stalled check) left the job "active" for up to a minute
    // after the restart, and the sweeper leaves active jobs alone (`npm run chaos`: 62 s).
    this.timeout(90_000);
    const path = '/kill-production';
    s.receiver.respond = (r) =>
      r.path === path && s.receiver.received.filter((x) => x.path === path).length === 1 ? 'hang' : 200;
    const id = await newDelivery(path, 'email.opened');
    const first = await startChild('production');
    const [held] = await s.receiver.waitForRequests(1, (r) => r.path === path, 15_000);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const killedAt = Date.now();
    const second = await startChild('production');
    try {
      // The lock lapses within 15 s and a check runs every 5 s (about 20 s in all); 40 s leaves
      // room for a loaded machine, and the old settings took a minute (two 30 s checks).
      const bound = TAKEOVER_LOCKS.lockDuration + 5 * TAKEOVER_LOCKS.stalledInterval;
      const got = await s.receiver.waitForRequests(2, (r) => r.path === path, bound - (Date.now() - killedAt));
      expect(got[1]!.headers['tern-delivery-id']).to.equal(id);
      expect(held!.headers['tern-delivery-id']).to.equal(id);
      await waitFor('the delivery to succeed', async () => (await state(id)).status === 'succeeded');
    } finally {
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
    }
  });

  it('the sweeper re-enqueues a due delivery whose job Redis lost', async () => {
    const id = await newDelivery('/lost', 'email.sent');
    const queue = s.api.deps.queues[QUEUE_NAMES.webhookDelivery];
    // Redis loses the job (a flush, a failover): Postgres still says the delivery is due.
    await (await queue.getJob(id))!.remove();
    const deps = workerDepsFor(s.api);
    try {
      expect(await sweepDeliveries(deps, 0)).to.be.at.least(1);
      expect(await sweepDeliveries(deps, 0)).to.equal(0);
    } finally {
      await deps.close();
    }
    const child = await startChild();
    try {
      await s.receiver.waitForRequests(1, (r) => r.path === '/lost' && r.headers['tern-delivery-id'] === id);
      await waitFor('the delivery to succeed', async () => (await state(id)).status === 'succeeded');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('by default the sweeper finds a delivery whose job Redis lost within seconds, not half a minute', async () => {
    const path = '/lost-default';
    const id = await newDelivery(path, 'email.clicked');
    const queue = s.api.deps.queues[QUEUE_NAMES.webhookDelivery];
    await (await queue.getJob(id))!.remove();
    await s.api.deps.sql`update webhook_deliveries set next_attempt_at = now() - interval '1 minute' where id = ${id}`;
    const deps = workerDepsFor(s.api);
    const worker = startWebhookDelivery(deps);
    try {
      // The first sweep runs one period after the start: 10 s (it was 30 s).
      await s.receiver.waitForRequests(1, (r) => r.path === path && r.headers['tern-delivery-id'] === id, 20_000);
      await waitFor('the delivery to succeed', async () => (await state(id)).status === 'succeeded');
    } finally {
      await worker.close();
      await deps.close();
    }
  });
});
