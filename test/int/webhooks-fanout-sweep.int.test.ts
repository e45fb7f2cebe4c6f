// The webhook fan-out drains the event log: an event whose wake-up never came (Redis lost it, or
// its publication failed) is fanned out by the timed drain, and concurrent drains fan each event
// out exactly once.
import type { Worker } from 'bullmq';
import { expect } from 'chai';
import { fanOutEvent, fanOutPending, startWebhookFanout } from '../../workers/webhook-fanout.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('webhook fan-out drain', () => {
  let s: WebhookStack;

  before(async () => {
    s = await startWebhookStack({ workers: false });
    await s.createWebhook({ url: `${s.receiver.url}/hook`, events: ['email.delivered'] });
  });
  after(async () => {
    await s.close();
  });

  /** An event recorded but never published: no wake-up job exists for it. */
  async function unpublishedEvent(type: 'email.delivered' | 'email.sent' = 'email.delivered'): Promise<string> {
    const email = await seedEmail(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
    });
    return (await seedEvent(s.api.deps.sql, email, type, 'ann@example.com')).id;
  }

  const deliveriesOf = async (ids: string[]) =>
    await s.api.deps.sql<{ event_id: string }[]>`select event_id from webhook_deliveries where event_id = any(${ids})`;

  const unfanned = async (ids: string[]) =>
    (await s.api.deps.sql`select id from events where id = any(${ids}) and webhooks_fanned_at is null`).length;

  it('the timer drains an event whose wake-up was lost', async () => {
    const deps = workerDepsFor(s.api);
    let worker: Worker | null = null;
    try {
      worker = startWebhookFanout(deps, { drainEveryMs: 100 });
      // The first event may go out with the start-up drain; the second is recorded after the first
      // was claimed (that pass found less than a batch, so it ended): only a later, timed drain
      // can fan it out.
      const first = await unpublishedEvent();
      await waitFor('the first event to be fanned out', async () => (await deliveriesOf([first])).length === 1);
      const id = await unpublishedEvent();
      await waitFor('the second event to be fanned out', async () => (await deliveriesOf([id])).length === 1);
      expect(await unfanned([id])).to.equal(0);
    } finally {
      await worker?.close();
      await deps.close();
    }
  });

  it('concurrent drains fan every pending event out exactly once and skip fanned-out ones', async () => {
    const deps = [workerDepsFor(s.api), workerDepsFor(s.api), workerDepsFor(s.api)];
    try {
      const done = await unpublishedEvent();
      expect(await fanOutEvent(deps[0]!, done)).to.equal(1);
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push(await unpublishedEvent());
      const noHook = await unpublishedEvent('email.sent');
      let claimed = 0;
      for (;;) {
        const passes = await Promise.all(deps.map((d) => fanOutPending(d, 4)));
        const n = passes.reduce((sum, p) => sum + p.claimed, 0);
        if (n === 0) break;
        claimed += n;
      }
      expect(claimed).to.equal(31);
      const rows = await deliveriesOf(ids);
      expect(rows.map((r) => r.event_id).sort()).to.deep.equal([...ids].sort());
      expect(await deliveriesOf([done])).to.have.length(1);
      expect(await deliveriesOf([noHook])).to.have.length(0);
      expect(await unfanned([...ids, noHook, done])).to.equal(0);
    } finally {
      for (const d of deps) await d.close();
    }
  });
});
