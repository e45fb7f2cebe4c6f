// The machine table (shared/engagement/machine-sources.ts) and the judgement of one open or click
// (shared/engagement/machine.ts): every row's ranges and agents are recognised with the row's
// reason, docs/tracking.md names every row, and each rule of DESIGN §20 decides as written.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { judgeHit, sourceReason, type HitSignals } from '../../shared/engagement/machine.js';
import { plainAddress } from '../../shared/ip-ranges.js';
import { LINK_BURST_MS, MACHINE_SOURCES, TOO_FAST_MS } from '../../shared/engagement/machine-sources.js';

const PERSON_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15';
const delivered = new Date('2026-01-01T10:00:00Z');
const later = new Date(delivered.getTime() + 3_600_000);

function hit(over: Partial<HitSignals>): HitSignals {
  return {
    kind: 'click',
    method: 'GET',
    ip: '203.0.113.7',
    userAgent: PERSON_UA,
    at: later,
    deliveredAt: delivered,
    otherLinkClicks: [],
    ...over,
  };
}

/** The first address of a CIDR block, and one inside it. */
function inside(cidr: string): string[] {
  const [net] = cidr.split('/');
  if (net!.includes(':')) return [net!.replace(/::$/, '::1')];
  const parts = net!.split('.').map(Number);
  return [net!, [parts[0], parts[1], parts[2], (parts[3]! + 1) % 256].join('.')];
}

describe('machine or person', () => {
  describe('the table', () => {
    for (const source of MACHINE_SOURCES) {
      it(`recognises ${source.name}`, () => {
        for (const cidr of source.ranges) {
          for (const ip of inside(cidr)) {
            expect(sourceReason(ip, PERSON_UA), `${ip} in ${cidr}`).to.equal(source.reason);
            expect(sourceReason(`::ffff:${ip}`, PERSON_UA), `mapped ${ip}`).to.equal(source.reason);
          }
        }
        for (const agent of source.agents) {
          const sample = agent.source.replace(/^\^|\$$/g, '').replace(/\\/g, '');
          expect(sourceReason('203.0.113.7', sample), sample).to.equal(source.reason);
        }
      });
    }

    it('is listed row by row in docs/tracking.md', () => {
      const page = readFileSync(new URL('../../docs/tracking.md', import.meta.url), 'utf8');
      for (const source of MACHINE_SOURCES) {
        expect(page, source.name).to.contain(`| ${source.name} |`);
        for (const cidr of source.ranges) expect(page, cidr).to.contain(cidr);
      }
    });

    it('leaves ordinary addresses and browsers alone', () => {
      expect(sourceReason('203.0.113.7', PERSON_UA)).to.equal(null);
      expect(sourceReason('18.0.0.1', PERSON_UA)).to.equal(null);
      expect(sourceReason('2001:db8::1', 'node')).to.equal(null);
      expect(sourceReason('not an address', PERSON_UA)).to.equal(null);
      expect(plainAddress('::FFFF:17.1.2.3')).to.deep.equal({ address: '17.1.2.3', family: 'ipv4' });
    });
  });

  describe('the rules', () => {
    it('a HEAD request is a machine before anything else', () => {
      expect(judgeHit(hit({ method: 'HEAD' }))).to.deep.equal({ machine: true, machine_reason: 'head' });
      expect(judgeHit(hit({ method: 'HEAD', kind: 'open', ip: '17.1.1.1' })).machine_reason).to.equal('head');
    });

    it("Apple's proxy by its range or its bare user agent", () => {
      expect(judgeHit(hit({ kind: 'open', ip: '17.58.1.2' })).machine_reason).to.equal('apple_mpp');
      expect(judgeHit(hit({ kind: 'open', userAgent: 'Mozilla/5.0' })).machine_reason).to.equal('apple_mpp');
      expect(judgeHit(hit({ kind: 'open', userAgent: ' Mozilla/5.0 ' })).machine_reason).to.equal('apple_mpp');
    });

    it('a scanner by its agent or range', () => {
      expect(judgeHit(hit({ userAgent: 'Mozilla/5.0 (compatible; BingPreview/1.0b)' })).machine_reason).to.equal(
        'scanner',
      );
      expect(judgeHit(hit({ ip: '40.107.3.4' })).machine_reason).to.equal('scanner');
    });

    it(`a click within ${TOO_FAST_MS} ms of delivery is too fast; an open is judged by its request only`, () => {
      const soon = new Date(delivered.getTime() + TOO_FAST_MS - 1);
      const edge = new Date(delivered.getTime() + TOO_FAST_MS);
      expect(judgeHit(hit({ at: soon })).machine_reason).to.equal('too_fast');
      expect(judgeHit(hit({ at: edge }))).to.deep.equal({ machine: false, machine_reason: null });
      expect(judgeHit(hit({ at: soon, kind: 'open' }))).to.deep.equal({ machine: false, machine_reason: null });
      expect(judgeHit(hit({ at: soon, deliveredAt: null })).machine).to.equal(false);
    });

    it(`another link of the message clicked less than ${LINK_BURST_MS} ms before is a scanner`, () => {
      const just = new Date(later.getTime() - LINK_BURST_MS + 1);
      const apart = new Date(later.getTime() - LINK_BURST_MS);
      expect(judgeHit(hit({ otherLinkClicks: [just] })).machine_reason).to.equal('scanner');
      expect(judgeHit(hit({ otherLinkClicks: [apart] })).machine).to.equal(false);
    });

    it('a person otherwise', () => {
      expect(judgeHit(hit({}))).to.deep.equal({ machine: false, machine_reason: null });
      expect(judgeHit(hit({ kind: 'open' }))).to.deep.equal({ machine: false, machine_reason: null });
    });
  });
});
