// Issue 6, "Done when": a scripted run of live sends across two domains, two keys, two templates
// and two kinds, with every outcome (delivered, delayed, hard and soft bounces, a block reply) and
// every engagement (opens, clicks with a repeated click, unsubscribes, complaints) going through
// the real pipeline with the metrics worker running; GET /metrics then equals, counter for
// counter, what the test computes from its own script (series, totals, rates, every facet's rows,
// CSV lines), and a domain-restricted key reads only its own domain.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { simpleParser } from 'mailparser';
import { startE2e, type E2eStack } from '../helpers/e2e-stack.js';
import type { Received } from '../helpers/smtp-sink.js';
import { pastTooFast } from '../helpers/tracking-rows.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = new URL('../fixtures/inbound/', import.meta.url);
const COUNTERS = [
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
  'delayed',
  'blocked',
] as const;
type Counter = (typeof COUNTERS)[number];
type Counts = Record<Counter, number>;
type ByRow = { key: string; label: string } & Record<Counter, number>;
const SERIES = COUNTERS.slice(0, 10);

type Outcome = 'ok' | 'later' | 'gone' | 'full' | 'blocked';
// `mpp`: Apple's proxy fetches the pixel; `scan`: a gateway checks the link with a HEAD.
type Action = 'open' | 'click' | 'click2' | 'unsub' | 'complain' | 'mpp' | 'scan';
interface Send {
  key: 'alpha' | 'beta';
  domain: 'acme.test' | 'beta.test';
  template?: 'welcome' | 'receipt';
  kind?: 'newsletter' | 'receipt';
  /** `<outcome>-<actions…>-<n>@<provider domain>` */
  to: string[];
}

// The script. The recipient's local part says what its MX answers and what the reader does.
const SCRIPT: Send[] = [
  {
    key: 'alpha',
    domain: 'acme.test',
    template: 'welcome',
    kind: 'newsletter',
    to: [
      'ok-open-click-click2-1@gmail.com',
      'ok-open-mpp-2@outlook.com',
      'later-open-click-3@gmail.com',
      'gone-4@dest.test',
    ],
  },
  { key: 'alpha', domain: 'acme.test', kind: 'receipt', to: ['ok-unsub-5@gmail.com', 'full-6@outlook.com'] },
  {
    key: 'alpha',
    domain: 'beta.test',
    template: 'receipt',
    kind: 'receipt',
    to: ['ok-complain-7@dest.test', 'blocked-8@dest.test'],
  },
  {
    key: 'beta',
    domain: 'beta.test',
    template: 'welcome',
    to: ['ok-click-open-unsub-9@outlook.com', 'later-10@gmail.com', 'gone-11@gmail.com'],
  },
  {
    key: 'beta',
    domain: 'beta.test',
    kind: 'newsletter',
    to: ['ok-mpp-scan-12@dest.test', 'ok-complain-click-13@outlook.com'],
  },
];

const PROVIDERS: Record<string, { id: string; label: string }> = {
  'gmail.com': { id: 'gmail', label: 'Gmail' },
  'outlook.com': { id: 'outlook', label: 'Outlook' },
  'dest.test': { id: 'other', label: 'Other' },
};
const KEY_NAMES = { alpha: 'Alpha, main key', beta: 'Beta only' };
const TEMPLATE_NAMES = { welcome: 'Welcome, friends', receipt: 'Receipt' };

function zero(): Counts {
  return Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Counts;
}

function parse(address: string): { outcome: Outcome; actions: Action[] } {
  const parts = address.split('@')[0]!.split('-');
  return { outcome: parts[0] as Outcome, actions: parts.slice(1, -1) as Action[] };
}

/** What one recipient adds, from the script alone. */
function countsOf(address: string): Counts {
  const { outcome, actions } = parse(address);
  const c = zero();
  c.sent = 1;
  if (outcome === 'ok' || outcome === 'later') c.delivered = 1;
  if (outcome === 'later') c.delayed = 1;
  if (outcome === 'gone') c.bouncedHard = 1;
  if (outcome === 'full' || outcome === 'blocked') c.bouncedSoft = 1;
  if (outcome === 'blocked') c.blocked = 1;
  if (actions.includes('open')) c.opened = 1;
  if (actions.includes('click')) c.clicked = 1; // a second click of the same recipient counts once
  if (actions.includes('mpp')) c.openedMachine = 1;
  if (actions.includes('scan')) c.clickedMachine = 1;
  if (actions.includes('unsub')) c.unsubscribed = 1;
  if (actions.includes('complain')) c.complained = 1;
  return c;
}

function add(into: Counts, c: Counts): void {
  for (const k of COUNTERS) into[k] += c[k];
}

function pct(n: number, d: number): number {
  return d === 0 ? 0 : Math.round((n / d) * 10000) / 100;
}

function ratesOf(t: Counts) {
  return {
    delivery: pct(t.delivered, t.sent),
    bounce: pct(t.bouncedHard + t.bouncedSoft, t.sent),
    hardBounce: pct(t.bouncedHard, t.sent),
    softBounce: pct(t.bouncedSoft, t.sent),
    complaint: pct(t.complained, t.delivered),
    open: pct(t.opened, t.delivered),
    click: pct(t.clicked, t.delivered),
    openMachine: pct(t.openedMachine, t.delivered),
    clickMachine: pct(t.clickedMachine, t.delivered),
  };
}

function pick(c: Counts, fields: readonly Counter[]): Record<string, number> {
  return Object.fromEntries(fields.map((f) => [f, c[f]]));
}

describe('end to end: scripted live sends → GET /metrics (issue 6)', function () {
  this.timeout(60_000);
  let s: E2eStack;
  const domainIds: Record<string, string> = {};
  const keys: Record<string, { id: string; token: string }> = {};
  const templates: Record<string, string> = {};
  let topicId: string;

  before(async () => {
    s = await startE2e((rcpt, n) => {
      const { outcome } = parse(rcpt);
      if (outcome === 'later' && n === 1) return { code: 451, message: '4.3.2 Try again later' };
      if (outcome === 'gone')
        return { code: 550, message: '5.1.1 The email account that you tried to reach does not exist' };
      if (outcome === 'full') return { code: 552, message: '5.2.2 The recipient mailbox is full' };
      if (outcome === 'blocked') {
        return {
          code: 554,
          message: '5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org',
        };
      }
      return null;
    });
    for (const d of Object.keys(PROVIDERS)) s.recipientDomain(d);
    for (const name of ['acme.test', 'beta.test']) {
      domainIds[name] = (await s.addDomain(name)).id;
      await s.admin('PATCH', `/domains/${domainIds[name]}`, { open_tracking: true, click_tracking: true }, 200);
    }
    keys.alpha = (await s.admin('POST', '/keys', { name: KEY_NAMES.alpha, permission: 'SEND' }, 201)).json;
    keys.beta = (
      await s.admin('POST', '/keys', { name: KEY_NAMES.beta, permission: 'SEND', domains: ['beta.test'] }, 201)
    ).json;
    keys.test = (await s.admin('POST', '/keys', { name: 'Test', permission: 'SEND', mode: 'test' }, 201)).json;
    for (const [slug, name] of Object.entries(TEMPLATE_NAMES)) {
      const html = `<html><body><p>Hello from ${slug}</p><a href="https://example.org/${slug}">More</a></body></html>`;
      templates[slug] = (await s.admin('POST', '/templates', { name, slug, subject: name, html }, 201)).json.id;
      await s.admin('POST', `/templates/${slug}/publish`, undefined, 200);
    }
    topicId = (await s.admin('POST', '/topics', { name: 'All', default_subscription: 'opt_in' }, 201)).json.id;
  });
  after(async () => await s?.close());

  /** Sends the script; returns [email id, key token] of every message. */
  async function runScript(): Promise<[string, string][]> {
    const ids: [string, string][] = [];
    for (const m of SCRIPT) {
      const body: Record<string, unknown> = { from: `Acme <news@${m.domain}>`, to: m.to, topic_id: topicId };
      if (m.template) body.template = { id: m.template };
      else Object.assign(body, { subject: 'Plain', html: '<p>Hi</p><a href="https://example.org/plain">Go</a>' });
      if (m.kind) body.kind = m.kind;
      const res = await s.api.request('POST', '/emails', { token: keys[m.key]!.token, body });
      expect(res.status, res.text).to.equal(200);
      ids.push([res.json.id, keys[m.key]!.token]);
    }
    // A test key's message: simulated, never counted.
    const t = await s.api.request('POST', '/emails', {
      token: keys.test!.token,
      body: { from: 'news@acme.test', to: ['ok-99@gmail.com', 'bounced@gmail.com'], subject: 'T', text: 'x' },
    });
    expect(t.status, t.text).to.equal(200);
    return [...ids, [t.json.id, keys.test!.token]];
  }

  async function engage(rcpt: string, msg: Received): Promise<void> {
    const parsed = await simpleParser(msg.raw);
    const raw = String(parsed.html);
    for (const action of parse(rcpt).actions) {
      if (action === 'open') {
        const pixel = /<img[^>]+src="([^"]*\/t\/o\/[^"]+)"/.exec(raw)![1]!;
        expect((await fetch(pixel)).status).to.equal(200);
      } else if (action === 'click' || action === 'click2') {
        const link = /href="([^"]*\/t\/c\/[^"]+)"/.exec(raw)![1]!;
        expect((await fetch(link, { redirect: 'manual' })).status).to.equal(302);
      } else if (action === 'mpp') {
        const pixel = /<img[^>]+src="([^"]*\/t\/o\/[^"]+)"/.exec(raw)![1]!;
        expect((await fetch(pixel, { headers: { 'user-agent': 'Mozilla/5.0' } })).status).to.equal(200);
      } else if (action === 'scan') {
        const link = /href="([^"]*\/t\/c\/[^"]+)"/.exec(raw)![1]!;
        expect((await fetch(link, { method: 'HEAD', redirect: 'manual' })).status).to.equal(302);
      } else if (action === 'unsub') {
        const head = msg.raw
          .toString('latin1')
          .split('\r\n\r\n')[0]!
          .replace(/\r\n[ \t]+/g, ' ');
        const url = /^List-Unsubscribe:\s*<(http[^>]+)>/im.exec(head)![1]!;
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'List-Unsubscribe=One-Click',
        });
        expect(res.status).to.equal(200);
      } else if (action === 'complain') {
        let arf = readFileSync(new URL('yahoo-arf-abuse.eml', FIXTURES), 'utf8');
        const messageId = parsed.messageId!.replace(/^<|>$/g, '');
        for (const [k, v] of Object.entries({ VERP: msg.mailFrom, RCPT: rcpt, MESSAGE_ID: messageId })) {
          arf = arf.split(`{{${k}}}`).join(v);
        }
        expect((await s.mailToMx('', msg.mailFrom, arf)).code).to.equal(250);
      }
    }
  }

  it('counts exactly what was sent, in every counter, rate, facet row and CSV line', async () => {
    const ids = await runScript();
    const all = SCRIPT.flatMap((m) => m.to);
    const delivered = all.filter((a) => ['ok', 'later'].includes(parse(a).outcome));
    const messages = new Map<string, Received>();
    for (const rcpt of delivered) {
      const msg = await waitFor(`${rcpt} at MX`, async () => s.sink.received.find((m) => m.rcptTo.includes(rcpt)));
      messages.set(rcpt, msg);
    }
    // People click later than gateways do: a click within TOO_FAST_MS of delivery is a machine's.
    await pastTooFast(s.api.deps.sql, delivered);
    for (const [rcpt, msg] of messages) {
      // A person opens a message once it is delivered: the worker has recorded the 250 (and the
      // recipient's provider) by then. (An open tracked in the instant between the receiving
      // server's 250 and that record is counted under the provider "none".)
      await waitFor(`${rcpt} recorded as delivered`, async () => {
        const [r] = await s.api.deps.sql<{ n: number }[]>`
          select count(*)::int as n from email_recipients where email = ${rcpt.toLowerCase()} and delivered_at is not null`;
        return r!.n > 0;
      });
      await engage(rcpt, msg);
    }
    await waitFor('every recipient in a final state', async () => {
      const states = await Promise.all(
        ids.map(async ([id, token]) => {
          const res = await s.api.request('GET', `/emails/${id}`, { token });
          return (res.json.recipients as { status: string }[]).every(
            (r) => !['queued', 'sent', 'delivery_delayed'].includes(r.status),
          );
        }),
      );
      return states.every(Boolean);
    });

    // Expected rows, from the script alone.
    const grain = SCRIPT.flatMap((m) =>
      m.to.map((a) => ({
        domain: m.domain,
        provider: PROVIDERS[a.split('@')[1]!]!,
        key: m.key,
        template: m.template,
        kind: m.kind,
        counts: countsOf(a),
      })),
    );
    type Row = (typeof grain)[number];
    const total = (rows: Row[]) => {
      const t = zero();
      rows.forEach((r) => add(t, r.counts));
      return t;
    };
    const facets: Record<string, (r: Row) => [key: string, label: string]> = {
      provider: (r) => [r.provider.id, r.provider.label],
      key: (r) => [keys[r.key]!.id, KEY_NAMES[r.key]],
      template: (r) => (r.template ? [templates[r.template]!, TEMPLATE_NAMES[r.template]] : ['none', 'No template']),
      kind: (r) => (r.kind ? [r.kind, r.kind] : ['none', 'No kind']),
    };
    const byRows = (rows: Row[], facet: string) => {
      const acc = new Map<string, { key: string; label: string; counts: Counts }>();
      for (const r of rows) {
        const [key, label] = facets[facet]!(r);
        const e = acc.get(key) ?? { key, label, counts: zero() };
        add(e.counts, r.counts);
        acc.set(key, e);
      }
      return [...acc.values()].map((e) => ({ ...pick(e.counts, COUNTERS), key: e.key, label: e.label }) as ByRow);
    };

    const get = async (query: string, token = s.org.key.token) => {
      const res = await s.api.request('GET', `/metrics${query}`, { token });
      expect(res.status, `${query}: ${res.text}`).to.equal(200);
      return res;
    };
    const orgTotal = total(grain);
    // The rollup is asynchronous: wait until the counters stop short of nothing, then compare all.
    await waitFor(
      'the rollup to catch up',
      async () => {
        const t = (await get('')).json.totals;
        return JSON.stringify(t) === JSON.stringify(pick(orgTotal, SERIES));
      },
      60_000,
    );
    const [counted] = await s.api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from events where metrics_counted_at is null`;
    expect(counted!.n).to.equal(0);

    const today = new Date().toISOString().slice(0, 10);
    const scopes: { query: string; domain: string | null; rows: Row[] }[] = [
      { query: '', domain: null, rows: grain },
      { query: 'domain=acme.test', domain: 'acme.test', rows: grain.filter((r) => r.domain === 'acme.test') },
      {
        query: `domain=${domainIds['beta.test']}`,
        domain: 'beta.test',
        rows: grain.filter((r) => r.domain === 'beta.test'),
      },
    ];
    for (const scope of scopes) {
      const t = total(scope.rows);
      const res = (await get(`?days=7&${scope.query}`)).json;
      expect(res.object).to.equal('metrics');
      expect(res.days).to.equal(7);
      expect(res.domain).to.equal(scope.domain);
      expect(res.series).to.have.length(7);
      for (const [i, row] of (res.series as { day: string }[]).entries()) {
        const day = new Date(Date.now() - (6 - i) * 86_400_000).toISOString().slice(0, 10);
        expect(row).to.deep.equal({ day, ...pick(day === today ? t : zero(), SERIES) });
      }
      expect(res.totals).to.deep.equal(pick(t, SERIES));
      expect(res.rates).to.deep.equal(ratesOf(t));
      expect(res).to.not.have.property('facet');

      for (const facet of Object.keys(facets)) {
        const f = (await get(`?${scope.query}&facet=${facet}`)).json;
        const want = byRows(scope.rows, facet);
        expect(f.facet).to.equal(facet);
        const sortKey = (r: { key: string }) => r.key;
        expect([...f.by].sort((a, b) => sortKey(a).localeCompare(sortKey(b)))).to.deep.equal(
          [...want].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
          `${scope.query || 'org'} facet=${facet}`,
        );
        const sents = (f.by as { sent: number }[]).map((r) => r.sent);
        expect(sents).to.deep.equal([...sents].sort((a, b) => b - a));
        // `key` narrows the breakdown to one row.
        const one = (await get(`?${scope.query}&facet=${facet}&key=${encodeURIComponent(want[0]!.key)}`)).json;
        expect(one.by).to.deep.equal([want[0]]);
      }
    }

    // CSV: the series, and a breakdown whose labels need quoting.
    const csv = await get('?days=3&format=csv');
    expect(csv.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).to.match(/^attachment; filename="[^"]+\.csv"$/);
    const seriesLines = [0, 1, 2].map((i) => {
      const day = new Date(Date.now() - (2 - i) * 86_400_000).toISOString().slice(0, 10);
      return [day, ...SERIES.map((c) => (day === today ? orgTotal[c] : 0))].join(',');
    });
    expect(csv.text).to.equal([['day', ...SERIES].join(','), ...seriesLines, ''].join('\r\n'));
    for (const facet of ['key', 'template']) {
      const res = await get(`?facet=${facet}&format=csv`);
      const json = (await get(`?facet=${facet}`)).json.by as Record<string, string | number>[];
      const quote = (v: string | number) =>
        typeof v === 'string' && /[",]/.test(v) ? `"${v.replace(/"/g, '""')}"` : String(v);
      const lines = json.map((r) => [r.key!, r.label!, ...COUNTERS.map((c) => r[c]!)].map(quote).join(','));
      expect(res.text).to.equal([['key', 'label', ...COUNTERS].join(','), ...lines, ''].join('\r\n'));
      const sorted = [...lines].sort();
      const want = byRows(grain, facet).map((r) => [r.key, r.label, ...COUNTERS.map((c) => r[c])].map(quote).join(','));
      expect(sorted).to.deep.equal(want.sort());
    }
    expect((await get('?facet=key&format=csv')).text).to.contain(`"${KEY_NAMES.alpha}"`);
  });

  it('shows a domain-restricted key only its own domain', async () => {
    const token = keys.beta!.token;
    const noDomain = await s.api.request('GET', '/metrics', { token });
    expect(noDomain.status).to.equal(403);
    expect(noDomain.json.error.code).to.equal('forbidden_domain');
    for (const other of ['acme.test', domainIds['acme.test']!, 'nowhere.test']) {
      const res = await s.api.request('GET', `/metrics?domain=${other}`, { token });
      expect(res.status, other).to.equal(422);
      expect(res.json.error.code).to.equal('unknown_domain');
    }
    const own = await s.api.request('GET', '/metrics?domain=beta.test&facet=key', { token });
    expect(own.status).to.equal(200);
    const viaAdmin = await s.api.request('GET', '/metrics?domain=beta.test&facet=key', { token: s.org.key.token });
    expect(own.json).to.deep.equal(viaAdmin.json);
    expect(own.json.domain).to.equal('beta.test');
    expect(own.json.totals.sent).to.equal(SCRIPT.filter((m) => m.domain === 'beta.test').flatMap((m) => m.to).length);
  });
});
