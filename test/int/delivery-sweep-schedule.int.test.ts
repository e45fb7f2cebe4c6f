// The delivery sweep (re-enqueues messages whose job was lost) runs as a BullMQ job scheduler,
// which is itself a Redis record: the worker must put it back when Redis loses it.
import { expect } from 'chai';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('delivery sweep schedule', () => {
  let api: TestApi;

  before(async () => {
    api = await startApi();
  });
  after(async () => {
    await api.close();
  });

  it('re-creates the sweep scheduler after Redis lost it', async () => {
    const deps = workerDepsFor(api);
    let worker: DeliveryWorkers | null = null;
    try {
      worker = await startDeliveryWorker(deps, { sweepEverySeconds: 60, rescheduleEveryMs: 100 });
      const queue = api.deps.queues.delivery;
      expect(await queue.getJobScheduler('delivery-sweep')).to.not.equal(undefined);
      // A flush or failover loses the scheduler record.
      // (The worker may put it back at once: its first triggered sweep re-asserts it too.)
      await queue.removeJobScheduler('delivery-sweep');
      await waitFor(
        'the worker to restore the sweep scheduler',
        async () => (await queue.getJobScheduler('delivery-sweep')) !== undefined,
      );
    } finally {
      await worker?.close();
      await deps.close();
    }
  });
});
