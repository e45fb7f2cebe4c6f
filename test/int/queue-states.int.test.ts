// The queue figures of GET /metrics, /healthz?verbose=1 and the console's Queues page
// (api/prometheus/queues.ts): the delivery queue keeps its jobs prioritized (stream, then each
import { enqueueMail } from '../../shared/queues.js';
// organization's backlog), so the age of the jobs workers take next must count them, not only
// the plain wait list.
import { expect } from 'chai';
import { queueStates } from '../../api/prometheus/queues.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('queue states', function () {
  let api: TestApi;

  before(async () => {
    api = await startApi();
  });

  after(async () => {
    await api.close();
  });

  it('reports the age of prioritized delivery jobs nobody has taken yet', async () => {
    const before = Date.now();
    await enqueueMail(api.deps.queues, [
      { emailId: 'em_waiting_one', orgId: 'org_a', stream: 'transactional', jobId: 'em_waiting_one' },
      { emailId: 'em_waiting_two', orgId: 'org_b', stream: 'transactional', jobId: 'em_waiting_two' },
      { emailId: 'em_waiting_three', orgId: 'org_a', stream: 'broadcast', jobId: 'em_waiting_three' },
    ]);
    await new Promise((r) => setTimeout(r, 1100));
    const delivery = (await queueStates(api.deps.queues)).find((q) => q.queue === 'delivery')!;
    expect(delivery.counts.prioritized).to.equal(2);
    expect(delivery.counts.waiting).to.equal(0);
    expect(delivery.oldestWaitingSeconds).to.be.at.least(1);
    expect(delivery.oldestWaitingSeconds).to.be.at.most((Date.now() - before) / 1000);
    const bulk = (await queueStates(api.deps.queues)).find((q) => q.queue === 'delivery-broadcast')!;
    expect(bulk.counts.prioritized).to.equal(1);
    expect(bulk.oldestWaitingSeconds).to.be.at.least(1);
    const idle = (await queueStates(api.deps.queues)).find((q) => q.queue === 'broadcast')!;
    expect(idle.oldestWaitingSeconds).to.equal(0);
  });
});
