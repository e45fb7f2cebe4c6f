// The API side's queues (web, relay, MX) on the fail-fast Redis client: a Redis too busy to
// answer while they are made must not leave them unable to add jobs once it answers again. Seen
// under a loaded machine: the web process's first command timed out, and every send it took
// afterwards was left to the delivery sweeper. A private Redis, paused with CLIENT PAUSE.
import { expect } from 'chai';
import { startPrivateRedis, type PrivateRedis } from '../../bench/lib/private-services.js';
import { createQueues, type Queues } from '../../shared/queues.js';
import { closeRedis, createRedis, waitReady, type Redis } from '../../shared/redis.js';
import { track } from '../helpers/resources.js';

describe('producer queues on the fail-fast client', function () {
  this.timeout(60_000);
  let redis: PrivateRedis;
  let client: Redis;
  let admin: Redis;
  let queues: Queues | undefined;
  let untrack: () => Promise<void>;

  before(async () => {
    redis = await startPrivateRedis({ persist: false });
    untrack = track('private redis', async () => {
      await queues?.close();
      await closeRedis(client);
      await closeRedis(admin);
      await redis.destroy();
    });
    client = createRedis(redis.url, 'api', 'test-producer');
    admin = createRedis(redis.url, 'bullmq', 'test-admin');
    expect(await waitReady(client, 10_000)).to.equal(true);
    expect(await waitReady(admin, 10_000)).to.equal(true);
  });

  after(async () => await untrack());

  it('add jobs once Redis answers again, when it did not answer while they were made', async () => {
    // Longer than the client's 2 s command timeout.
    await admin.call('CLIENT', 'PAUSE', '3500', 'ALL');
    queues = createQueues(client, 'tern-test-producer');
    await new Promise((r) => setTimeout(r, 4000));
    const job = await queues.inbound.add('message', { inboundId: 'in_test' } as never, { jobId: 'in_test' });
    expect(job.id).to.equal('in_test');
    expect(await admin.exists('tern-test-producer:inbound:in_test')).to.equal(1);
    await queues.delivery.enqueue([
      { emailId: 'em_test', orgId: 'org_test', stream: 'transactional', jobId: 'em_test' },
    ]);
    expect(await admin.exists('tern-test-producer:delivery:em_test')).to.equal(1);
  });
});
