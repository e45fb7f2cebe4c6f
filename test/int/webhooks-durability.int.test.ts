import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { QUEUE_NAMES } from '../../shared/queues.js';
import { fanOutEvent } from '../../workers/webhook-fanout.js';
import { sweepDeliveries } from '../../workers/webhook-sweeper.js';
import { until } from '../helpers/receiver.js';
import { track } from '../helpers/resources.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';

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

  async function startChild(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/webhook-worker-child.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: s.api.db.url,
        REDIS_URL: s.api.config.redisUrl,
        REDIS_PREFIX: s.api.config.redisPrefix,
        WEBHOOK_ALLOW_PRIVATE: 'true',
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

  async function newDelivery(path: string, type: 'email.delivered' | 'email.sent'): Promise<string> {
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
    const [held] = await s.receiver.waitFor(1, 15_000, (r) => r.path === '/kill');
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const second = await startChild();
    try {
      const got = await s.receiver.waitFor(2, 20_000, (r) => r.path === '/kill');
      expect(got[1]!.headers['tern-delivery-id']).to.equal(id);
      expect(held!.headers['tern-delivery-id']).to.equal(id);
      expect(got[1]!.raw.equals(held!.raw)).to.equal(true);
      const final = await until(async () => ((await state(id)).status === 'succeeded' ? state(id) : null));
      expect(final.attempts).to.equal(2);
      const count = await s.api.deps
        .sql`select 1 from webhook_deliveries where event_id = (select event_id from webhook_deliveries where id = ${id})`;
      expect(count).to.have.length(1);
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
      await s.receiver.waitFor(1, 15_000, (r) => r.path === '/lost' && r.headers['tern-delivery-id'] === id);
      await until(async () => (await state(id)).status === 'succeeded');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
