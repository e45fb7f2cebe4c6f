import { expect } from 'chai';
import { BroadcastShare } from '../../workers/delivery/broadcast-share.js';
import { sleep } from '../helpers/wait.js';

describe('BroadcastShare', () => {
  it('holds the broadcast worker to its share while transactional deliveries run, and a while after', async () => {
    const worker = { concurrency: 1 };
    const share = new BroadcastShare(10, 0.5, 50);
    share.attach(worker);
    expect(worker.concurrency).to.equal(10);
    share.transactionalStarted();
    share.transactionalStarted();
    expect(worker.concurrency).to.equal(5);
    share.transactionalEnded();
    expect(worker.concurrency).to.equal(5);
    share.transactionalEnded();
    // The last one ended: still held during the hold time, so a trickle does not swing it.
    expect(share.limited).to.equal(true);
    await sleep(20);
    share.transactionalStarted();
    share.transactionalEnded();
    await sleep(35);
    expect(worker.concurrency, 'a new transactional delivery restarts the hold').to.equal(5);
    await sleep(40);
    expect(worker.concurrency).to.equal(10);
    expect(share.limited).to.equal(false);
    share.detach();
  });

  it('leaves broadcast mail one slot at least, and never more than the concurrency', () => {
    expect(new BroadcastShare(10, 0, 50).cap).to.equal(1);
    expect(new BroadcastShare(3, 0.2, 50).cap).to.equal(1);
    expect(new BroadcastShare(4, 1, 50).cap).to.equal(4);
  });
  it('follows the transactional mail of another thread, and tells its own changes', () => {
    const worker = { concurrency: 1 };
    const share = new BroadcastShare(10, 0.3, 50);
    const told: boolean[] = [];
    share.onChange((limited) => told.push(limited));
    share.attach(worker);
    share.setRemote(true);
    expect(worker.concurrency).to.equal(3);
    share.setRemote(false);
    expect(worker.concurrency).to.equal(10);
    share.transactionalStarted();
    share.transactionalStarted();
    share.setRemote(true);
    share.setRemote(false);
    expect(worker.concurrency, 'still held by its own transactional mail').to.equal(3);
    expect(told).to.deep.equal([true, false, true]);
    share.detach();
  });
});
