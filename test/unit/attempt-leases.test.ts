// A delivery run's attempt lease, as its own process sees it (workers/delivery/leases.ts): a run
// stopped past its lease (SIGSTOP, a paused VM) must not send the attempts another job may have
// taken over meanwhile; a new hand-over makes them its own again.
import { expect } from 'chai';
import { pino } from 'pino';
import type { Sql } from '../../shared/db/pool.js';
import { AttemptLeases } from '../../workers/delivery/leases.js';

function fakeSql(state: { fail: boolean; renewed: string[][] }): Sql {
  const tag = (_strings: TemplateStringsArray, ...values: unknown[]) => {
    if (state.fail) return Promise.reject(new Error('connection refused'));
    state.renewed.push(values.find(Array.isArray) as string[]);
    return Promise.resolve([]);
  };
  return tag as unknown as Sql;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('attempt leases', () => {
  const logger = pino({ level: 'silent' });

  it('holds until the lease (less a margin) has run out, then never again until a new hand-over', () => {
    const leases = new AttemptLeases(fakeSql({ fail: false, renewed: [] }), logger, 15, 60_000);
    try {
      const t0 = Date.now();
      const token = leases.hold('job-1');
      expect(leases.holds(token, t0)).to.equal(true);
      expect(leases.holds(token, t0 + 13_500)).to.equal(true);
      // Woken past the lease: lapsed, and it stays so even if the clock reads earlier later.
      expect(leases.holds(token, t0 + 40_000)).to.equal(false);
      expect(leases.holds(token, t0)).to.equal(false);
      // A hand-over leased its attempts again.
      const at = Date.now();
      leases.leased(token, at);
      expect(leases.holds(token, at + 1000)).to.equal(true);
      leases.release(token);
      expect(leases.holds(token, at + 1000)).to.equal(false);
    } finally {
      leases.close();
    }
  });

  it('renewals keep a token held; renewals that fail let it lapse; a lapsed token is not renewed', async function () {
    this.timeout(15_000);
    const state = { fail: false, renewed: [] as string[][] };
    const leases = new AttemptLeases(fakeSql(state), logger, 3, 100);
    try {
      const a = leases.hold('job-a');
      const b = leases.hold('job-b');
      // Past the first lease (3 s, less the 1 s margin): held only through the renewals.
      await sleep(2500);
      expect(leases.holds(a)).to.equal(true);
      expect(leases.holds(b)).to.equal(true);
      expect(state.renewed.at(-1)).to.have.members([a, b]);
      // b's process "was stopped" past its lease.
      expect(leases.holds(b, Date.now() + 5000)).to.equal(false);
      await sleep(300);
      expect(state.renewed.at(-1)).to.deep.equal([a]);
      expect(leases.holds(b)).to.equal(false);
      // Postgres away: nothing renews, and a fades out too.
      state.fail = true;
      await sleep(2300);
      expect(leases.holds(a)).to.equal(false);
    } finally {
      leases.close();
    }
  });
});
