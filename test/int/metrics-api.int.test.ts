import { expect } from 'chai';
import { applyDeltas, type Delta } from '../../shared/db/metrics.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const API_COUNTERS = [
  'sent',
  'delivered',
  'bouncedHard',
  'bouncedSoft',
  'complained',
  'opened',
  'clicked',
  'unsubscribed',
  'openedMachine',
  'clickedMachine',
] as const;
const DB_COUNTERS = [
  'sent',
  'delivered',
  'bounced_hard',
  'bounced_soft',
  'complained',
  'opened',
  'clicked',
  'unsubscribed',
  'delayed',
  'blocked',
  'opened_machine',
  'clicked_machine',
] as const;
const FACET_API = [...API_COUNTERS, 'delayed', 'blocked'] as const;

function day(offset: number): string {
  return new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
}

// Deterministic pseudo-random numbers (a failing case can be replayed).
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

describe('GET /metrics', () => {
  let api: TestApi;
  let org: SeededOrg;
  const domains = ['one.test', 'two.test', 'three.test'];
  const providers = ['gmail', 'outlook', 'yahoo'];
  let keys: string[] = [];
  const templates = ['tpl_A', 'tpl_B'];
  const kinds = ['receipt', 'news'];
  const cells: Delta[] = [];
  let restricted: { id: string; token: string };
  let testKey: { id: string; token: string };

  before(async function () {
    this.timeout(120_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: domains.map((name) => ({ name })) });
    await unthrottle(api, org.organization.id);
    const k1 = await org.mint({ permission: 'SEND', name: 'Key, with comma' });
    const k2 = await org.mint({ permission: 'FULL', name: 'Second "quoted" key' });
    keys = [k1.id, k2.id, org.key.id];
    restricted = await org.mint({ permission: 'SEND', domains: ['two.test'] });
    testKey = await org.mint({ permission: 'SEND', mode: 'test' });
    const rand = rng(42);
    // 90 days × 3 domains × 3 providers × 3 keys × 2 templates × 2 kinds, plus days outside the window.
    for (let d = -1; d < 93; d++) {
      for (const dom of domains) {
        for (const provider of providers) {
          for (const keyId of keys) {
            for (const templateId of templates) {
              for (const kind of kinds) {
                const counts: Record<string, number> = {};
                for (const c of DB_COUNTERS) counts[c] = Math.floor(rand() * 5);
                cells.push({
                  orgId: org.organization.id,
                  day: day(d),
                  domainId: org.domains[dom]!.id,
                  provider,
                  keyId,
                  templateId,
                  kind,
                  counts,
                });
              }
            }
          }
        }
      }
    }
    // Rows of another organization must never leak in.
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
    await applyDeltas(
      api.deps.sql,
      cells
        .slice(0, 500)
        .map((c) => ({ ...c, orgId: other.organization.id, domainId: other.domains['other.test']!.id })),
    );
    for (let i = 0; i < cells.length; i += 2000) await applyDeltas(api.deps.sql, cells.slice(i, i + 2000));
  });
  after(async () => api.close());

  function brute(days: number, filter: (c: Delta) => boolean) {
    const from = day(days - 1);
    const to = day(0);
    return cells.filter((c) => c.day >= from && c.day <= to && filter(c));
  }

  function sum(rows: Delta[], col: string): number {
    return rows.reduce((a, c) => a + ((c.counts as Record<string, number>)[col] ?? 0), 0);
  }

  function expectTotals(json: { totals: Record<string, number> }, rows: Delta[]) {
    expect(json.totals).to.deep.equal({
      sent: sum(rows, 'sent'),
      delivered: sum(rows, 'delivered'),
      bouncedHard: sum(rows, 'bounced_hard'),
      bouncedSoft: sum(rows, 'bounced_soft'),
      complained: sum(rows, 'complained'),
      opened: sum(rows, 'opened'),
      clicked: sum(rows, 'clicked'),
      unsubscribed: sum(rows, 'unsubscribed'),
      openedMachine: sum(rows, 'opened_machine'),
      clickedMachine: sum(rows, 'clicked_machine'),
    });
  }

  const get = (path: string, token = org.key.token) => api.request('GET', path, { token });

  it('returns the organization total with one row per day, oldest first, zeros included', async () => {
    const res = await get('/metrics?days=90');
    expect(res.status).to.equal(200);
    expect(Object.keys(res.json)).to.deep.equal(['object', 'days', 'domain', 'series', 'totals', 'rates']);
    expect(res.json).to.include({ object: 'metrics', days: 90, domain: null });
    expect(res.json.series).to.have.length(90);
    expect(res.json.series[0].day).to.equal(day(89));
    expect(res.json.series[89].day).to.equal(day(0));
    expect(Object.keys(res.json.series[0])).to.deep.equal(['day', ...API_COUNTERS]);
    expectTotals(
      res.json,
      brute(90, () => true),
    );
    const today = brute(1, () => true);
    expect(res.json.series[89].sent).to.equal(sum(today, 'sent'));
  });

  it('defaults to 30 days and fills days without data with zeros', async () => {
    const res = await get('/metrics');
    expect(res.json.days).to.equal(30);
    expect(res.json.series).to.have.length(30);
    expectTotals(
      res.json,
      brute(30, () => true),
    );
    const fresh = await seedOrg(api.deps.sql);
    const empty = await get('/metrics?days=3', fresh.key.token);
    expect(empty.json.series.map((r: { sent: number }) => r.sent)).to.deep.equal([0, 0, 0]);
    expect(empty.json.rates).to.deep.equal({
      delivery: 0,
      bounce: 0,
      hardBounce: 0,
      softBounce: 0,
      complaint: 0,
      open: 0,
      click: 0,
      openMachine: 0,
      clickMachine: 0,
    });
  });

  it('computes rates per DESIGN §8', async () => {
    const res = await get('/metrics?days=7&domain=one.test');
    const rows = brute(7, (c) => c.domainId === org.domains['one.test']!.id);
    const s = sum(rows, 'sent');
    const d = sum(rows, 'delivered');
    const r = (n: number, den: number) => (den === 0 ? 0 : Math.round((n / den) * 10000) / 100);
    expect(res.json.rates).to.deep.equal({
      delivery: r(d, s),
      bounce: r(sum(rows, 'bounced_hard') + sum(rows, 'bounced_soft'), s),
      hardBounce: r(sum(rows, 'bounced_hard'), s),
      softBounce: r(sum(rows, 'bounced_soft'), s),
      complaint: r(sum(rows, 'complained'), d),
      open: r(sum(rows, 'opened'), d),
      click: r(sum(rows, 'clicked'), d),
      openMachine: r(sum(rows, 'opened_machine'), d),
      clickMachine: r(sum(rows, 'clicked_machine'), d),
    });
  });

  for (const facet of ['provider', 'key', 'template', 'kind'] as const) {
    it(`breaks down by ${facet}, for the org and each domain, with key filters`, async () => {
      const dim = { provider: 'provider', key: 'keyId', template: 'templateId', kind: 'kind' }[facet] as keyof Delta;
      for (const dom of [null, ...domains]) {
        const days = dom ? 14 : 60;
        const qs = `days=${days}&facet=${facet}${dom ? `&domain=${dom}` : ''}`;
        const res = await get(`/metrics?${qs}`);
        expect(res.status).to.equal(200);
        expect(res.json.facet).to.equal(facet);
        expect(res.json.domain).to.equal(dom);
        const scope = brute(days, (c) => dom === null || c.domainId === org.domains[dom]!.id);
        expectTotals(res.json, scope);
        const values = [...new Set(scope.map((c) => c[dim] as string))].sort();
        expect(res.json.by.map((r: { key: string }) => r.key).sort()).to.deep.equal(values);
        for (const row of res.json.by) {
          const rows = scope.filter((c) => c[dim] === row.key);
          expect(Object.keys(row)).to.deep.equal(['key', 'label', ...FACET_API]);
          expect(row.sent).to.equal(sum(rows, 'sent'));
          expect(row.bouncedHard).to.equal(sum(rows, 'bounced_hard'));
          expect(row.unsubscribed).to.equal(sum(rows, 'unsubscribed'));
          expect(row.delayed).to.equal(sum(rows, 'delayed'));
          expect(row.blocked).to.equal(sum(rows, 'blocked'));
          expect(row.openedMachine).to.equal(sum(rows, 'opened_machine'));
          expect(row.clickedMachine).to.equal(sum(rows, 'clicked_machine'));
          expect(row.label).to.be.a('string').and.not.equal('');
        }
        const one = values[1]!;
        const filtered = await get(`/metrics?${qs}&key=${encodeURIComponent(one)}`);
        expect(filtered.json.by).to.have.length(1);
        expect(filtered.json.by[0].key).to.equal(one);
        expect(filtered.json.by[0].clicked).to.equal(
          sum(
            scope.filter((c) => c[dim] === one),
            'clicked',
          ),
        );
      }
    });
  }

  it('labels keys by name and providers by their human name', async () => {
    const byKey = await get('/metrics?days=3&facet=key');
    const labels = Object.fromEntries(byKey.json.by.map((r: { key: string; label: string }) => [r.key, r.label]));
    expect(labels[keys[0]!]).to.equal('Key, with comma');
    const byProvider = await get('/metrics?days=3&facet=provider');
    const gmail = byProvider.json.by.find((r: { key: string }) => r.key === 'gmail');
    expect(gmail.label).to.equal('Gmail');
  });

  it('accepts the domain by id', async () => {
    const id = org.domains['three.test']!.id;
    const res = await get(`/metrics?days=5&domain=${id}`);
    expect(res.json.domain).to.equal('three.test');
    expectTotals(
      res.json,
      brute(5, (c) => c.domainId === id),
    );
  });

  it('serves CSV: series, and the breakdown with RFC 4180 quoting', async () => {
    const res = await get('/metrics?days=3&format=csv');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).to.match(/^attachment; filename="[^"]+\.csv"$/);
    const lines = res.text.split('\r\n');
    expect(lines[0]).to.equal(
      'day,sent,delivered,bouncedHard,bouncedSoft,complained,opened,clicked,unsubscribed,openedMachine,clickedMachine',
    );
    expect(lines).to.have.length(5); // header, 3 days, final empty
    expect(lines[1]!.startsWith(`${day(2)},`)).to.equal(true);
    const json = await get('/metrics?days=3');
    expect(lines[3]).to.equal([day(0), ...API_COUNTERS.map((c) => json.json.series[2][c])].join(','));

    const facet = await get('/metrics?days=3&facet=key&format=csv');
    const rows = facet.text.split('\r\n');
    expect(rows[0]).to.equal(['key', 'label', ...FACET_API].join(','));
    expect(facet.text).to.contain(`${keys[0]},"Key, with comma",`);
    expect(facet.text).to.contain(`${keys[1]},"Second ""quoted"" key",`);
  });

  it('restricted keys: must name their own domain', async () => {
    const none = await get('/metrics', restricted.token);
    expect(none.status).to.equal(403);
    expect(none.json.error.code).to.equal('forbidden_domain');
    const other = await get('/metrics?domain=one.test', restricted.token);
    expect(other.status).to.equal(422);
    expect(other.json.error.code).to.equal('unknown_domain');
    const own = await get('/metrics?days=4&domain=two.test&facet=kind', restricted.token);
    expect(own.status).to.equal(200);
    expectTotals(
      own.json,
      brute(4, (c) => c.domainId === org.domains['two.test']!.id),
    );
  });

  it('answers 422 for unknown domains and bad parameters', async () => {
    const cases: [string, string][] = [
      ['/metrics?domain=nope.test', 'unknown_domain'],
      ['/metrics?domain=dom_01JAAAAAAAAAAAAAAAAAAAAAAA', 'unknown_domain'],
      ['/metrics?days=0', 'validation_error'],
      ['/metrics?days=91', 'validation_error'],
      ['/metrics?days=1.5', 'validation_error'],
      ['/metrics?days=abc', 'validation_error'],
      ['/metrics?days=', 'validation_error'],
      ['/metrics?days=1&days=2', 'validation_error'],
      ['/metrics?facet=country', 'validation_error'],
      ['/metrics?format=xml', 'validation_error'],
      ['/metrics?key=gmail', 'validation_error'],
    ];
    for (const [path, code] of cases) {
      const res = await get(path);
      expect(res.status, path).to.equal(422);
      expect(res.json.error.code, path).to.equal(code);
      expect(res.json.error.message, path).to.be.a('string');
    }
  });

  it('any key may read, test keys included', async () => {
    const res = await get('/metrics?days=2', testKey.token);
    expect(res.status).to.equal(200);
    expectTotals(
      res.json,
      brute(2, () => true),
    );
  });
});
