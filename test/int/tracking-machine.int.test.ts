// DESIGN §20 through the tracking links: real HTTP requests to /t/o and /t/c that speak for a
// person, Apple's Mail Privacy Protection proxy (by range and by bare user agent), a HEAD check,
// a link scanner (by agent and by range), a click too soon after delivery and a burst over several
// links, with the client address given by X-Forwarded-For under TRUST_PROXY. Each hit's judgement
// reaches the event, the webhook body, the recipient's stamps and GET /metrics (JSON, CSV, facet).
import { expect } from 'chai';
import { rollupPending } from '../../shared/metrics/rollup.js';
import type { EventRow } from '../../shared/events.js';
import { clickUrl, openPixelUrl } from '../../shared/tracking.js';
import { startApi } from '../helpers/stack.js';
import { insertTrackedMessage, type TrackedMessage } from '../helpers/tracking-rows.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { waitFor } from '../helpers/wait.js';

const BROWSER =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const HOME = '203.0.113.10';

describe('machine or person, through the tracking links (TRUST_PROXY)', () => {
  let s: WebhookStack;
  let n = 0;

  before(async () => {
    s = await startWebhookStack({ env: { TRUST_PROXY: 'true' } });
    await s.createWebhook({ url: `${s.receiver.url}/engagement`, events: ['email.opened', 'email.clicked'] });
  });
  after(async () => s.close());

  const message = (opts: { deliveredInSeconds?: number } = {}) =>
    insertTrackedMessage(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
      domainName: 'acme.test',
      keyId: s.org.key.id,
      recipient: `reader${++n}@gmail.com`,
      provider: 'gmail',
      ...opts,
    });
  const params = (m: TrackedMessage) => ({
    baseUrl: s.api.url,
    secret: s.api.config.secretKey,
    emailId: m.emailId,
    recipientId: m.recipientId,
  });
  const hit = (url: string, from: { ip?: string; agent?: string; method?: string } = {}) =>
    fetch(url, {
      method: from.method ?? 'GET',
      redirect: 'manual',
      headers: { 'x-forwarded-for': `${from.ip ?? HOME}, 10.0.0.1`, 'user-agent': from.agent ?? BROWSER },
    });
  const open = async (m: TrackedMessage, from?: Parameters<typeof hit>[1]) =>
    expect((await hit(openPixelUrl(params(m)), from)).status).to.equal(200);
  const click = async (m: TrackedMessage, url: string, from?: Parameters<typeof hit>[1]) => {
    const res = await hit(clickUrl({ ...params(m), url }), from);
    expect(res.status).to.equal(302);
    expect(res.headers.get('location')).to.equal(url);
  };
  const judged = async (m: TrackedMessage, type: string) =>
    (
      await s.api.deps.sql<EventRow[]>`
        select * from events where recipient_id = ${m.recipientId} and type = ${type} order by id`
    ).map((e) => e.data);
  const stamps = async (m: TrackedMessage) =>
    (
      await s.api.deps.sql<{ opened_at: Date | null; clicked_at: Date | null }[]>`
      select opened_at, clicked_at from email_recipients where id = ${m.recipientId}`
    )[0]!;
  const machine = (reason: string) => ({ machine: true, machine_reason: reason });
  const person = { machine: false, machine_reason: null };

  it('a person: a browser at home opens and clicks, and the recipient is stamped', async () => {
    const m = await message();
    await open(m);
    await click(m, 'https://example.com/a');
    expect(await judged(m, 'email.opened')).to.deep.equal([person]);
    expect(await judged(m, 'email.clicked')).to.deep.equal([person]);
    const st = await stamps(m);
    expect(st.opened_at).to.be.an.instanceOf(Date);
    expect(st.clicked_at).to.be.an.instanceOf(Date);
  });

  it("Apple's proxy by its range and by its bare user agent: opened_at waits for a person", async () => {
    const m = await message();
    await open(m, { ip: '17.58.101.7' });
    await open(m, { ip: '198.51.100.2', agent: 'Mozilla/5.0' });
    expect(await judged(m, 'email.opened')).to.deep.equal([machine('apple_mpp')]); // once per recipient
    expect((await stamps(m)).opened_at).to.equal(null);
    await open(m);
    expect(await judged(m, 'email.opened')).to.deep.equal([machine('apple_mpp'), person]);
    expect((await stamps(m)).opened_at).to.be.an.instanceOf(Date);
  });

  it('a HEAD request, a scanner by agent and a scanner by range: clicked_at stays empty', async () => {
    const m = await message();
    await click(m, 'https://example.com/h', { method: 'HEAD' });
    await click(m, 'https://example.com/h', { agent: 'Mozilla/5.0 (compatible; BingPreview/1.0b)' });
    await click(m, 'https://example.com/h', { ip: '40.107.22.9' });
    expect(await judged(m, 'email.clicked')).to.deep.equal([machine('head'), machine('scanner'), machine('scanner')]);
    expect((await stamps(m)).clicked_at).to.equal(null);
  });

  it('a click within 2 s of delivery is too fast', async () => {
    // The delivery is stamped ahead of the clock, so the click lands within TOO_FAST_MS of it
    // however slowly the loaded machine makes the request.
    const m = await message({ deliveredInSeconds: 3600 });
    await click(m, 'https://example.com/t');
    expect(await judged(m, 'email.clicked')).to.deep.equal([machine('too_fast')]);
    expect((await stamps(m)).clicked_at).to.equal(null);
  });

  it('several links of one message within a second are a scanner', async () => {
    const m = await message();
    await click(m, 'https://example.com/one');
    // The first click is moved ahead of the clock, so the second (another link) lands within
    // LINK_BURST_MS of it however slowly the loaded machine makes the request.
    await s.api.deps.sql`
      update events set created_at = now() + interval '1 hour'
      where recipient_id = ${m.recipientId} and type = 'email.clicked'`;
    await click(m, 'https://example.com/two');
    expect(await judged(m, 'email.clicked')).to.deep.equal([person, machine('scanner')]);
  });

  it('X-Forwarded-For counts only under TRUST_PROXY', async () => {
    const direct = await startApi({ db: s.api.db, prefix: s.api.config.redisPrefix });
    try {
      const m = await message();
      const url = openPixelUrl({ ...params(m), baseUrl: direct.url });
      const res = await fetch(url, { headers: { 'x-forwarded-for': '17.58.101.7', 'user-agent': BROWSER } });
      expect(res.status).to.equal(200);
      expect(await judged(m, 'email.opened')).to.deep.equal([person]);
    } finally {
      await direct.close();
    }
  });

  it('webhooks carry machine and machine_reason', async () => {
    const rows = await s.api.deps.sql<EventRow[]>`
      select * from events where org_id = ${s.org.organization.id} and type in ('email.opened', 'email.clicked')`;
    const got = await s.receiver.waitForRequests(rows.length, (r) => r.path === '/engagement');
    const line = (type: string, d: Record<string, unknown>) =>
      JSON.stringify([type, d.recipient, d.url ?? null, d.machine, d.machine_reason]);
    const sent = got.map((r) => JSON.parse(r.raw.toString('utf8'))).map((b) => line(b.type, b.data));
    const recorded = rows.map((e) => line(e.type, { ...e.data, recipient: e.recipient, url: e.url }));
    expect(sent.sort()).to.deep.equal(recorded.sort());
    expect(sent.filter((l) => l.includes('"apple_mpp"'))).to.have.length(1);
  });

  it('GET /metrics counts people in opened/clicked and machines in openedMachine/clickedMachine', async () => {
    await waitFor('every event counted', async () => (await rollupPending(s.api.deps.sql, 1000)).claimed === 0);
    const token = s.org.key.token;
    const res = await s.api.request('GET', '/metrics?days=1', { token });
    expect(res.status, res.text).to.equal(200);
    // Recipients: 1 person (open, click); 2 MPP then person (open); 3 head/scanners (clicks);
    // 4 too fast; 5 a person, then a burst; 6 a person (the direct API's open).
    expect(res.json.totals).to.include({ opened: 3, openedMachine: 1, clicked: 2, clickedMachine: 3 });
    const delivered = res.json.totals.delivered as number;
    expect(res.json.rates.open).to.equal(delivered === 0 ? 0 : Math.round((3 / delivered) * 10000) / 100);
    const facet = await s.api.request('GET', '/metrics?days=1&facet=provider', { token });
    expect(facet.json.by[0]).to.include({ key: 'gmail', opened: 3, openedMachine: 1, clicked: 2, clickedMachine: 3 });
    const csv = await s.api.request('GET', '/metrics?days=1&facet=provider&format=csv', { token });
    const [head, row] = csv.text.trim().split('\r\n');
    const cols = head!.split(',');
    const cells = row!.split(',');
    expect(cells[cols.indexOf('openedMachine')]).to.equal('1');
    expect(cells[cols.indexOf('clickedMachine')]).to.equal('3');
    expect(cells[cols.indexOf('opened')]).to.equal('3');
  });
});
