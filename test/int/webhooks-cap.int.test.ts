import { expect } from 'chai';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';

describe('webhook per-endpoint concurrency cap', () => {
  let s: WebhookStack;
  let inFlightSlow = 0;
  let maxInFlightSlow = 0;

  before(async () => {
    s = await startWebhookStack({
      respond: (req) => {
        if (!req.path.startsWith('/slow')) return 200;
        return (res) => {
          // Hangs (until the attempt's deadline or the test closes the receiver).
          inFlightSlow++;
          maxInFlightSlow = Math.max(maxInFlightSlow, inFlightSlow);
          res.on('close', () => inFlightSlow--);
        };
      },
      // Without the cap, 8 hanging attempts would hold all 6 worker slots for 20 s.
      delivery: { concurrency: 6, perEndpointLimit: 2, timeoutMs: 20_000, schedule: [] },
    });
  });
  after(async () => s.close());

  it("keeps another endpoint's deliveries flowing while one endpoint hangs", async () => {
    await s.createWebhook({ url: `${s.receiver.url}/slow`, events: ['email.opened'] });
    await s.createWebhook({ url: `${s.receiver.url}/fast`, events: ['email.clicked'] });
    const email = await seedEmail(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
    });
    const slow = [];
    for (let i = 0; i < 8; i++) slow.push(await seedEvent(s.api.deps.sql, email, 'email.opened', 'ann@example.com'));
    await s.publish(slow.map((e) => e.id));
    await s.receiver.waitForRequests(2, (r) => r.path === '/slow');
    const fast = [];
    for (let i = 0; i < 8; i++) {
      fast.push(await seedEvent(s.api.deps.sql, email, 'email.clicked', 'ann@example.com', { url: 'https://x.test/' }));
    }
    await s.publish(fast.map((e) => e.id));
    // Well within the slow endpoint's 20 s deadline: only possible if its attempts hold ≤ 2 slots.
    await s.receiver.waitForRequests(8, (r) => r.path === '/fast', 10_000);
    expect(maxInFlightSlow).to.equal(2);
    expect(s.receiver.received.filter((r) => r.path === '/slow')).to.have.length(2);
  });
});
