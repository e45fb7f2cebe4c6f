// The pool's reconnect delay (shared/db/pool.ts): a Postgres restart of a few seconds must not
// leave a process waiting long after Postgres is back. postgres.js's default grows to 20 s by a
// failure count its connections share (measured: 5-10 s of silence after a restart); the pool's
// delay starts in milliseconds and never passes 2 s.
import { expect } from 'chai';
import { reconnectDelaySeconds } from '../../shared/db/pool.js';

describe('Postgres reconnect delay', () => {
  it('starts in milliseconds and never passes 2 s, however many failures in a row', () => {
    for (let retries = 0; retries <= 100; retries++) {
      for (let i = 0; i < 20; i++) {
        const s = reconnectDelaySeconds(retries);
        expect(s, `after ${retries} failures`).to.be.within(0, 2);
        if (retries <= 1) expect(s).to.be.at.most(0.1);
      }
    }
    // It does back off: far from the first delays once failures pile up.
    expect(reconnectDelaySeconds(20)).to.be.at.least(1);
  });
});
