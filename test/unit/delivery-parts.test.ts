import { expect } from 'chai';
import { parseVerpAddress, parseVerpToken, verpAddress, verpToken } from '../../shared/mail/verp.js';
import { nextUtcMidnight, warmupCap } from '../../workers/delivery/caps.js';
import { retryDelaySeconds, simulate } from '../../workers/delivery/verdict.js';

const SECRET = 'x'.repeat(40);

describe('VERP tokens', () => {
  const rid = 'rcp_01JABCDEFGHJKMNPQRSTVWXYZ0';
  it('round-trips a recipient id, case-insensitively, and fits a local part', () => {
    const address = verpAddress(rid, 'acme.test', SECRET);
    expect(address).to.match(/^b\+[a-z0-9_.]+@bounces\.acme\.test$/);
    expect(address.split('@')[0]!.length).to.be.at.most(64);
    expect(parseVerpAddress(address, SECRET)).to.equal(rid);
    expect(parseVerpAddress(address.toUpperCase(), SECRET)).to.equal(rid);
  });
  it('refuses a forged or altered token', () => {
    const t = verpToken(rid, SECRET);
    expect(parseVerpToken(t, 'y'.repeat(40))).to.equal(null);
    expect(
      parseVerpToken(
        t.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')),
        SECRET,
      ),
    ).to.equal(null);
    expect(parseVerpToken('rcp_01jabcdefghjkmnpqrstvwxyz1' + t.slice(30), SECRET)).to.equal(null);
    expect(parseVerpAddress('someone@acme.test', SECRET)).to.equal(null);
  });
});

describe('warm-up caps', () => {
  const now = new Date('2026-03-10T12:00:00Z');
  it('ramps from the verification day, then lifts', () => {
    expect(warmupCap(new Date('2026-03-10T01:00:00Z'), now)).to.equal(50);
    expect(warmupCap(new Date('2026-03-09T23:59:00Z'), now)).to.equal(100);
    expect(warmupCap(new Date('2026-03-01T00:00:00Z'), now)).to.equal(50_000);
    expect(warmupCap(new Date('2026-02-28T00:00:00Z'), now)).to.equal(Infinity);
    expect(warmupCap(null, now)).to.equal(50);
    expect(nextUtcMidnight(now).toISOString()).to.equal('2026-03-11T00:00:00.000Z');
  });
});

describe('retry schedule and test-mode simulation', () => {
  it('backs off along the schedule, the last step repeating', () => {
    const s = [60, 300, 900];
    expect([1, 2, 3, 4, 9].map((a) => retryDelaySeconds(s, a))).to.deep.equal([60, 300, 900, 900, 900]);
  });
  it('chooses outcomes by local part and attempt', () => {
    expect(simulate('bounced1@x.test', 1)).to.include({ kind: 'bounced', bounceType: 'hard' });
    expect(simulate('softbounced@x.test', 1).kind).to.equal('deferred');
    expect(simulate('softbounced@x.test', 2)).to.include({ kind: 'bounced', bounceType: 'soft', detail: 'General' });
    expect(simulate('delayed@x.test', 1).kind).to.equal('deferred');
    expect(simulate('delayed@x.test', 2).kind).to.equal('delivered');
    expect(simulate('Complained@x.test', 1)).to.include({ kind: 'delivered', complained: true });
    expect(simulate('rejected@x.test', 1).kind).to.equal('rejected');
    expect(simulate('anyone@x.test', 1).kind).to.equal('delivered');
  });
});
