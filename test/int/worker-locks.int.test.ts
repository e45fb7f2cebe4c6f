// The consumers whose jobs a person waits for take over a dead worker's jobs within seconds: their
// BullMQ lock lapses after 15 s and any live worker checks for stalled jobs every 5 s
// (TAKEOVER_LOCKS), not BullMQ's 30 s and 30 s. The durability of each is in docs/operations.md.
import { expect } from 'chai';
import { QUEUE_NAMES, TAKEOVER_LOCKS } from '../../shared/queues.js';
import { registry } from '../../workers/registry.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';

const TAKEOVER = [
  QUEUE_NAMES.delivery,
  QUEUE_NAMES.deliveryBroadcast,
  QUEUE_NAMES.webhookDelivery,
  QUEUE_NAMES.inbound,
  QUEUE_NAMES.broadcast,
  QUEUE_NAMES.automation,
];

describe('worker lock settings', () => {
  let api: TestApi;

  before(async () => {
    api = await startApi();
  });
  after(async () => api.close());

  it('takes over a dead worker’s delivery, webhook, inbound, broadcast and automation jobs within seconds', async () => {
    const deps = workerDepsFor(api);
    try {
      for (const queue of TAKEOVER) {
        const consumer = registry.find((c) => c.queue === queue);
        expect(consumer, queue).to.exist;
        const worker = await consumer!.start(deps);
        try {
          expect(worker.opts.lockDuration, queue).to.equal(TAKEOVER_LOCKS.lockDuration);
          expect(worker.opts.stalledInterval, queue).to.equal(TAKEOVER_LOCKS.stalledInterval);
        } finally {
          await worker.close();
        }
      }
    } finally {
      await deps.close();
    }
  });
});
