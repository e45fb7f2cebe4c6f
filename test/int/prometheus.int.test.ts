// GET /metrics against what the test did (issue 16, item 1): sends through the API, a batch and
// the relay, deliveries to a local MX (delivered and bounced), webhooks answered 500 then 200 and
// always 500, a reply and a refused recipient at Tern's MX, rate-limit refusals on the API and
// the relay, a paused organization and jobs waiting in a queue nothing consumes. The scrape is
// read with a real text-format parser (test/helpers/prometheus.ts); counters recorded by the
// workers reach it through their own periodic flush to Redis, and a second web process on the
// same install answers for the first. Access (token, none, PROMETHEUS_PUBLIC) at the end.
import { expect } from 'chai';
import { RECORDED, SCRAPED, PROCESS_FAMILIES } from '../../shared/prom/families.js';
import { startE2e, type E2eStack } from '../helpers/e2e-stack.js';
import { scrape, type Scrape } from '../helpers/prometheus.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { rawSession, startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'prometheus-test-token-0123456789';

describe('GET /metrics: the figures of what the test did (issue 16.1)', function () {
  this.timeout(90_000);
  let s: E2eStack;
  let relay: TestRelay;
  let flaky: Receiver;
  let broken: Receiver;
  let second: TestApi;
  let limited: SeededOrg;
  let sendKey: { id: string; token: string };
  const http = { keysMe: { 200: 0, 429: 0 }, relayCodes: [] as number[] };
  let startedAt = 0;
  const broadcastJobs = { before: 0, after: 0 };

  before(async () => {
    s = await startE2e(
      (rcpt) => (rcpt.startsWith('gone@') ? { code: 550, message: '5.1.1 <gone>: User unknown' } : null),
      { apiEnv: { PROMETHEUS_TOKEN: TOKEN } },
    );
    s.recipientDomain('dest.test');
    await s.addDomain('acme.test');
    sendKey = await s.org.mint({ permission: 'SEND' });
    relay = await startRelay(s.api);
    // A: answers 500 once, then 200. B (email.received only): always 500, until it gives up.
    flaky = await startReceiver((_r, n) => (n === 1 ? 500 : 200));
    broken = await startReceiver(() => 500);
    await s.admin('POST', '/webhooks', { url: `${flaky.url}/a` }, 201);
    await s.admin('POST', '/webhooks', { url: `${broken.url}/b`, events: ['email.received'] }, 201);
    limited = await seedOrg(s.api.deps.sql);
    await s.api.deps.sql`
      update organizations set rate_limit_per_second = 1, rate_limit_burst = 1 where id = ${limited.organization.id}`;
    second = await startApi({ db: s.api.db, prefix: s.api.config.redisPrefix, env: { PROMETHEUS_TOKEN: TOKEN } });
  });

  after(async () => {
    await s?.api.deps.queues.broadcast.obliterate({ force: true }).catch(() => {});
    await second?.close();
    await relay?.close();
    await flaky?.close();
    await broken?.close();
    await s?.close();
  });

  async function drive(): Promise<void> {
    startedAt = Date.now();
    const one = await s.api.request('POST', '/emails', {
      token: sendKey.token,
      body: { from: 'news@acme.test', to: ['ann@dest.test', 'gone@dest.test'], subject: 'One', text: 'x' },
    });
    expect(one.status, one.text).to.equal(200);
    const batch = await s.api.request('POST', '/emails/batch', {
      token: sendKey.token,
      body: ['bob', 'carl'].map((n) => ({ from: 'news@acme.test', to: `${n}@dest.test`, subject: 'B', text: 'x' })),
    });
    expect(batch.status, batch.text).to.equal(200);
    await relay
      .transport(sendKey.id, sendKey.token)
      .sendMail({ from: 'news@acme.test', to: 'dan@dest.test', subject: 'Relay', text: 'x' });
    // Raw paths never become labels: an unknown email id and a path no route has.
    expect((await s.api.request('GET', '/emails/em_doesnotexist', { token: sendKey.token })).status).to.equal(404);
    expect((await fetch(`${s.api.url}/nowhere-at-all`)).status).to.equal(404);
    // Rate limit (1/s, burst 1): quick requests on the API, then MAIL FROM on the relay.
    for (let i = 0; i < 5; i++) {
      const r = await s.api.request('GET', '/api/v1/keys/me', { token: limited.key.token });
      expect(r.status).to.be.oneOf([200, 429]);
      http.keysMe[r.status as 200 | 429] += 1;
    }
    const session = await rawSession(relay.port, limited.key.id, limited.key.token);
    for (let i = 0; i < 4; i++)
      http.relayCodes.push(Number((await session.command('MAIL FROM:<x@nowhere.test>')).slice(0, 3)));
    await session.close();
    // Tern's MX: a reply, and a recipient it refuses.
    const reply = await s.mailToMx(
      'ann@dest.test',
      'support@reply.acme.test',
      'From: ann@dest.test\r\nTo: support@reply.acme.test\r\nSubject: Re: One\r\nMessage-ID: <r1@dest.test>\r\n\r\nThanks\r\n',
    );
    expect(reply.code).to.equal(250);
    expect((await s.mailToMx('ann@dest.test', 'nobody@elsewhere.test', 'Subject: x\r\n\r\nx\r\n')).code).to.equal(550);
    const paused = await seedOrg(s.api.deps.sql);
    const pause = await s.api.request('PATCH', '/organization', {
      token: paused.key.token,
      body: { sending_paused: true },
    });
    expect(pause.status, pause.text).to.equal(200);
  }

  async function settled(): Promise<boolean> {
    const [row] = await s.api.deps.sql<{ busy: number }[]>`
      select (select count(*) from email_recipients where status in ('queued', 'sent', 'delivery_delayed'))
           + (select count(*) from events where webhooks_fanned_at is null)
           + (select count(*) from webhook_deliveries where status = 'pending')
           + (select count(*) from inbound_messages where status = 'stored') as busy`;
    return Number(row!.busy) === 0;
  }

  it('counts what the test did, across processes', async () => {
    await drive();
    broadcastJobs.before = Date.now();
    await s.api.deps.queues.broadcast.add('batch', { broadcastId: 'bc_nothing', after: null });
    broadcastJobs.after = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    await s.api.deps.queues.broadcast.add('batch', { broadcastId: 'bc_nothing_2', after: null });
    await waitFor('deliveries, webhooks and inbound to settle', settled, 45_000);
    // A pending delivery due tomorrow, created 90 s ago: the backlog and its age.
    const [hook] = await s.api.deps.sql<{ id: string }[]>`select id from webhooks where url like ${`${flaky.url}%`}`;
    await s.api.deps.sql`
      insert into webhook_deliveries (id, webhook_id, org_id, event_id, event_type, body, next_attempt_at, created_at)
      values ('whd_backlog', ${hook!.id}, ${s.org.organization.id}, 'evt_backlog', 'email.sent', '\\x7b7d',
              now() + interval '1 day', now() - interval '90 seconds')`;
    const failedDeliveries = Number(
      (await s.api.deps.sql<{ n: string }[]>`select count(*) as n from webhook_deliveries where status = 'failed'`)[0]!
        .n,
    );
    // A answered 500 to its first request and 200 to the others; B answered 500 to every
    // attempt, the last of which ended its delivery.
    const expected = {
      succeeded: flaky.received.length - 1,
      retrying: 1 + broken.received.length - failedDeliveries,
      failed: failedDeliveries,
    };
    expect(failedDeliveries, 'endpoint B gave up on its one delivery').to.equal(1);

    // The worker-side figures arrive with the workers' own flush (every 5 s); the second web
    // process reads the same hash.
    let m!: Scrape;
    await waitFor(
      'the workers and the MX to flush their counts',
      async () => {
        m = await scrape(second.url, TOKEN);
        return (
          m.sum('tern_webhook_deliveries_total', { result: 'succeeded' }) === expected.succeeded &&
          m.sum('tern_webhook_deliveries_total', { result: 'retrying' }) === expected.retrying &&
          m.sum('tern_webhook_deliveries_total', { result: 'failed' }) === expected.failed &&
          m.sum('tern_inbound_messages_total', { kind: 'reply' }) === 1 &&
          m.sum('tern_delivery_attempts_total') === 5 &&
          m.sum('tern_smtp_sessions_total', { server: 'mx' }) === 2
        );
      },
      20_000,
    );
    const requestedAt = Date.now();
    m = await scrape(second.url, TOKEN);

    // Sends, by source and stream.
    expect(m.sum('tern_emails_accepted_total', { source: 'api', stream: 'transactional' })).to.equal(1);
    expect(m.sum('tern_emails_accepted_total', { source: 'batch', stream: 'transactional' })).to.equal(2);
    expect(m.sum('tern_emails_accepted_total', { source: 'relay', stream: 'transactional' })).to.equal(1);
    expect(m.sum('tern_emails_accepted_total')).to.equal(4);

    // Deliveries: 4 delivered, 1 bounced (5.1.1), all to an `other` provider, default pool.
    const attempts = { provider: 'other', pool: 'default' };
    expect(m.sum('tern_delivery_attempts_total', { ...attempts, outcome: 'delivered' })).to.equal(4);
    expect(m.sum('tern_delivery_attempts_total', { ...attempts, outcome: 'bounced' })).to.equal(1);
    expect(s.sink.received).to.have.length(4);
    const latency = m.select('tern_delivery_latency_seconds_count', { stream: 'transactional' });
    expect(latency.map((x) => x.value)).to.deep.equal([4]);
    const latencySum = m.sum('tern_delivery_latency_seconds_sum', { stream: 'transactional' });
    expect(latencySum)
      .to.be.greaterThan(0)
      .and.at.most((4 * (Date.now() - startedAt)) / 1000);
    expect(m.sum('tern_delivery_latency_seconds_bucket', { stream: 'transactional', le: '+Inf' })).to.equal(4);

    // Webhooks: A failed once then succeeded; B failed on every attempt and gave up.
    expect(m.sum('tern_webhook_deliveries_total', { result: 'succeeded' })).to.equal(expected.succeeded);
    expect(m.sum('tern_webhook_deliveries_total', { result: 'retrying' })).to.equal(expected.retrying);
    expect(m.sum('tern_webhook_deliveries_total', { result: 'failed' })).to.equal(expected.failed);
    expect(m.sum('tern_webhook_backlog')).to.equal(1);
    const age = m.sum('tern_webhook_oldest_pending_seconds');
    expect(age)
      .to.be.at.least(90)
      .and.below(90 + (Date.now() - requestedAt) / 1000 + 60);

    // Rate limits: as many as the test was refused, on each side.
    expect(http.keysMe[429], 'the API refused at least one request').to.be.at.least(1);
    expect(http.relayCodes.filter((c) => c === 451).length, 'the relay refused a MAIL FROM').to.be.at.least(1);
    expect(m.sum('tern_rate_limited_total', { source: 'api' })).to.equal(http.keysMe[429]);
    expect(m.sum('tern_rate_limited_total', { source: 'relay' })).to.equal(
      http.relayCodes.filter((c) => c === 451).length,
    );

    // SMTP: two relay sessions (nodemailer, the raw one), two MX sessions; refusals by class.
    expect(m.sum('tern_smtp_sessions_total', { server: 'relay' })).to.equal(2);
    expect(m.sum('tern_smtp_sessions_total', { server: 'mx' })).to.equal(2);
    for (const code of new Set(http.relayCodes.filter((c) => c >= 400))) {
      const n = http.relayCodes.filter((c) => c === code).length;
      expect(m.sum('tern_smtp_refusals_total', { server: 'relay', code: String(code) }), `relay ${code}`).to.equal(n);
      expect(m.select('tern_smtp_refusals_total', { server: 'relay', code: String(code) })[0]!.labels.class).to.equal(
        `${String(code)[0]}xx`,
      );
    }
    expect(m.sum('tern_smtp_refusals_total', { server: 'mx', class: '5xx', code: '550' })).to.equal(1);
    expect(m.sum('tern_inbound_messages_total')).to.equal(1);
    expect(m.sum('tern_organizations_paused')).to.equal(1);

    // Queues: every delivery job done by the one delivery worker; two jobs waiting for a
    // broadcast worker that does not run, the first since before the test added it.
    expect(m.sum('tern_queue_jobs', { queue: 'delivery', state: 'completed' })).to.equal(4);
    expect(m.sum('tern_queue_jobs', { queue: 'delivery', state: 'waiting' })).to.equal(0);
    expect(m.sum('tern_queue_workers', { queue: 'delivery' })).to.be.at.least(1);
    expect(m.sum('tern_queue_jobs', { queue: 'broadcast', state: 'waiting' })).to.equal(2);
    expect(m.sum('tern_queue_workers', { queue: 'broadcast' })).to.equal(0);
    const oldest = m.sum('tern_queue_oldest_waiting_seconds', { queue: 'broadcast' });
    expect(oldest).to.be.at.least((requestedAt - broadcastJobs.after) / 1000);
    expect(oldest).to.be.at.most((Date.now() - broadcastJobs.before) / 1000);

    // HTTP, by route template: never the raw path.
    const rq = (route: string, method: string, status: string) =>
      m.sum('tern_http_requests_total', { route, method, status });
    expect(rq('/api/v1/emails', 'POST', '200')).to.equal(1);
    expect(rq('/api/v1/emails/batch', 'POST', '200')).to.equal(1);
    expect(rq('/api/v1/emails/:id', 'GET', '404')).to.equal(1);
    expect(rq('unmatched', 'GET', '404')).to.equal(1);
    expect(rq('/api/v1/keys/me', 'GET', '200')).to.equal(http.keysMe[200]);
    expect(rq('/api/v1/keys/me', 'GET', '429')).to.equal(http.keysMe[429]);
    const labelValues = m.samples.flatMap((x) => Object.values(x.labels));
    expect(labelValues.filter((v) => /doesnotexist|nowhere/.test(v))).to.deep.equal([]);
    for (const series of m.select('tern_http_request_duration_seconds_count')) {
      const { route, method, status } = series.labels;
      expect(rq(route!, method!, status!), `${route} ${status}`).to.equal(series.value);
      const buckets = m.select('tern_http_request_duration_seconds_bucket', {
        route: route!,
        method: method!,
        status: status!,
      });
      const values = buckets.map((b) => b.value);
      expect(values, 'cumulative buckets').to.deep.equal([...values].sort((a, b) => a - b));
      expect(buckets.at(-1)!.labels.le).to.equal('+Inf');
      expect(buckets.at(-1)!.value).to.equal(series.value);
    }
  });

  it('counts requests made to another web process of the install', async () => {
    const before = (await scrape(s.api.url, TOKEN)).sum('tern_http_requests_total', { route: '/readyz' });
    for (let i = 0; i < 3; i++) expect((await fetch(`${second.url}/readyz`)).status).to.equal(200);
    // The second process adds them on its own timer; the first answers for both.
    await waitFor(
      'the other web process to flush',
      async () => (await scrape(s.api.url, TOKEN)).sum('tern_http_requests_total', { route: '/readyz' }) === before + 3,
      15_000,
    );
  });

  it('declares every family with its type, and the process metrics of the web process', async () => {
    const m = await scrape(s.api.url, TOKEN);
    for (const [name, f] of [...Object.entries(RECORDED), ...Object.entries(SCRAPED)]) {
      expect(m.types.get(name), name).to.equal(f.type.toUpperCase());
    }
    for (const name of PROCESS_FAMILIES) expect(m.types.has(name), name).to.equal(true);
    expect(m.sum('tern_scrape_source_up')).to.equal(3);
    expect(m.sum('tern_process_cpu_seconds_total')).to.be.greaterThan(0);
  });
});

describe('GET /metrics and /healthz?verbose=1: access', function () {
  this.timeout(30_000);

  async function get(api: TestApi, path: string, token?: string) {
    const res = await fetch(`${api.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      code: text.startsWith('{') ? JSON.parse(text).error?.code : null,
    };
  }

  it('with PROMETHEUS_TOKEN: the token only (401 otherwise, with WWW-Authenticate)', async () => {
    const api = await startApi({ env: { PROMETHEUS_TOKEN: TOKEN, PROMETHEUS_PUBLIC: 'true' } });
    try {
      for (const path of ['/metrics', '/healthz?verbose=1']) {
        const none = await get(api, path);
        expect([none.status, none.code], path).to.deep.equal([401, 'unauthorized']);
        expect(none.headers.get('www-authenticate')).to.match(/^Bearer /);
        const wrong = await get(api, path, `${TOKEN}x`);
        expect([wrong.status, wrong.code], path).to.deep.equal([401, 'unauthorized']);
        expect((await get(api, path, TOKEN)).status, path).to.be.oneOf([200, 503]);
      }
      const ok = await get(api, '/metrics', TOKEN);
      expect(ok.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
      expect(ok.text).to.contain('# TYPE tern_http_requests_total counter');
      expect((await get(api, '/healthz')).text).to.equal('{"status":"ok"}');
    } finally {
      await api.close();
    }
  });

  it('without a token: 403 unless PROMETHEUS_PUBLIC=true', async () => {
    const closed = await startApi();
    const open = await startApi({ env: { PROMETHEUS_PUBLIC: 'true' } });
    try {
      for (const path of ['/metrics', '/healthz?verbose=1']) {
        const refused = await get(closed, path);
        expect([refused.status, refused.code], path).to.deep.equal([403, 'forbidden']);
        expect(JSON.parse(refused.text).error.message)
          .to.contain('PROMETHEUS_TOKEN')
          .and.to.contain('PROMETHEUS_PUBLIC');
        expect((await get(open, path)).status, path).to.be.oneOf([200, 503]);
      }
      expect((await get(open, '/metrics')).text).to.contain('tern_scrape_source_up{source="redis"} 1');
      expect((await get(closed, '/healthz')).status).to.equal(200);
    } finally {
      await closed.close();
      await open.close();
    }
  });
});
