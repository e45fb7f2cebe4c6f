// Durability of the webhook fan-out: an event whose fan-out job Redis lost after publication
// (events.published_at set) still gets its deliveries, from the sweeper the fan-out worker runs.
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { QUEUE_NAMES } from '../../shared/queues.js';
import { fanOutEvent, startWebhookFanout, sweepFanouts } from '../../workers/webhook-fanout.js';
import { until } from '../helpers/receiver.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';

describe('webhook fan-out sweep', () => {
  let s: WebhookStack;

  before(async () => {
    s = await startWebhookStack({ workers: false });
    await s.createWebhook({ url: `${s.receiver.url}/hook`, events: ['email.delivered'] });
  });
  after(async () => {
    await s.close();
  });

  async function publishedEvent(): Promise<string> {
    const email = await seedEmail(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
    });
    const ev = await seedEvent(s.api.deps.sql, email, 'email.delivered', 'ann@example.com');
    await s.publish([ev.id]);
    return ev.id;
  }

  const ageBy2Minutes = (id: string) =>
    s.api.deps.sql`update events set published_at = published_at - interval '2 minutes' where id = ${id}`;

  const deliveriesOf = async (id: string) =>
    (await s.api.deps.sql<{ id: string }[]>`select id from webhook_deliveries where event_id = ${id}`).length;

  it('the fan-out worker re-enqueues a published event whose job Redis lost', async () => {
    const id = await publishedEvent();
    // Redis loses the job (flush, failover) after publication was recorded.
    await (await s.api.deps.queues[QUEUE_NAMES.webhookFanout].getJob(id))!.remove();
    await ageBy2Minutes(id);
    const deps = workerDepsFor(s.api);
    let worker: Worker | null = null;
    try {
      worker = startWebhookFanout(deps, { sweepEveryMs: 100 });
      await until(async () => (await deliveriesOf(id)) === 1);
      const [ev] = await s.api.deps.sql<{ webhooks_fanned_at: Date | null }[]>`
        select webhooks_fanned_at from events where id = ${id}`;
      expect(ev!.webhooks_fanned_at).to.be.an.instanceOf(Date);
    } finally {
      await worker?.close();
      await deps.close();
    }
  });

  it('leaves fanned-out events, recent events and waiting jobs alone; replaces a failed job', async () => {
    const deps = workerDepsFor(s.api);
    const queue = s.api.deps.queues[QUEUE_NAMES.webhookFanout];
    try {
      const done = await publishedEvent();
      expect(await fanOutEvent(deps, done)).to.equal(1);
      await ageBy2Minutes(done);
      const waiting = await publishedEvent();
      await ageBy2Minutes(waiting);
      const recent = await publishedEvent();
      await (await queue.getJob(recent))!.remove();
      expect(await sweepFanouts(deps)).to.equal(0);
      expect(await queue.getJob(recent)).to.equal(undefined);

      // A job that gave up (all attempts failed during an outage) is replaced by a fresh one.
      const job = (await queue.getJob(waiting))!;
      await s.api.deps.redis.zadd(`${queue.qualifiedName}:failed`, Date.now(), waiting);
      await s.api.deps.redis.lrem(`${queue.qualifiedName}:wait`, 0, waiting);
      expect(await job.getState()).to.equal('failed');
      expect(await sweepFanouts(deps)).to.equal(1);
      expect(await (await queue.getJob(waiting))!.getState()).to.equal('waiting');
      expect(await deliveriesOf(done)).to.equal(1);
    } finally {
      await deps.close();
    }
  });
});
