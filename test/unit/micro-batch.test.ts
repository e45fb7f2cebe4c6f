import { expect } from 'chai';
import { MicroBatcher } from '../../shared/micro-batch.js';
import { sleep } from '../helpers/wait.js';

describe('MicroBatcher', () => {
  it('runs the items of one event-loop turn together, and those added meanwhile in the next batch', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, number>(async (xs) => {
      batches.push(xs);
      await sleep(5);
      return xs.map((x) => x * 2);
    });
    const first = [1, 2, 3].map((x) => b.add(x));
    await new Promise((r) => setImmediate(r));
    const second = [4, 5].map((x) => b.add(x)); // while the first batch is in flight
    expect(await Promise.all([...first, ...second])).to.deep.equal([2, 4, 6, 8, 10]);
    expect(batches).to.deep.equal([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('never puts two items of one key in a batch, and caps a batch at maxItems', async () => {
    const batches: string[][] = [];
    const b = new MicroBatcher<string, string>(
      async (xs) => {
        batches.push(xs);
        return xs;
      },
      { keyOf: (x) => x[0]!, maxItems: 2 },
    );
    await Promise.all(['a1', 'a2', 'b1', 'c1'].map((x) => b.add(x)));
    expect(batches).to.deep.equal([
      ['a1', 'b1'],
      ['a2', 'c1'],
    ]);
  });

  it('retries a failed batch item by item, so that only the bad item fails', async () => {
    const b = new MicroBatcher<number, number>(async (xs) => {
      if (xs.includes(2)) throw new Error('bad item');
      return xs;
    });
    const results = await Promise.allSettled([1, 2, 3].map((x) => b.add(x)));
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).to.equal('bad item');
  });

  it('fails every item with the batch error, without splitting, when splitOn says the error concerns all', async () => {
    let runs = 0;
    const outage = new Error('Connection is closed.');
    const b = new MicroBatcher<number, number>(
      async () => {
        runs++;
        throw outage;
      },
      { splitOn: (err) => err !== outage },
    );
    const results = await Promise.allSettled([1, 2, 3].map((x) => b.add(x)));
    expect(results.map((r) => (r.status === 'rejected' ? r.reason : null))).to.deep.equal([outage, outage, outage]);
    expect(runs).to.equal(1);
  });
});
