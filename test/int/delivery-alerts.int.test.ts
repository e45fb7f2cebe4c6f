// Alert rules (DESIGN §5 Organization) on live mail through real SMTP: a crossed bounce-rate
// `pause` rule with enough volume pauses sending (reason naming the rule, shown by
// GET /organization), every web process answers 403 sending_paused at once, queued mail is held
// and released on resume; below min_volume nothing happens; `notify` only logs; test mode never counts.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { seedOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('alert rules', function () {
  this.timeout(60_000);
  let api: TestApi;
  let api2: TestApi;
  let sink: Sink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  const logLines: { event?: string; orgId?: string; msg?: string }[] = [];

  before(async () => {
    api = await startApi();
    // A second web process of the same install, with its own auth cache.
    api2 = await startApi({ db: api.db, prefix: api.config.redisPrefix });
    sink = await startSink((rcpt) => (rcpt.startsWith('nobody') ? { code: 550, message: '5.1.1 user unknown' } : null));
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    const base = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_PAUSE_RECHECK_SECONDS: '0.3',
    });
    const sinkStream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
        cb();
      },
    });
    deps = { ...base, logger: pino({ level: 'info' }, sinkStream) };
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });

  after(async () => {
    await worker.close();
    await deps.close();
    await sink.close();
    await dns.close();
    await api2.close();
    await api.close();
  });

  let n = 0;
  async function org(rules: unknown[]) {
    const domain = `alerts${++n}.test`;
    const o = await seedOrg(api.deps.sql, { domains: [{ name: domain }] });
    const domainId = o.domains[domain]!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    await giveDkimKey(api.deps.sql, domainId);
    const patch = await api.request('PATCH', '/organization', { token: o.key.token, body: { alert_rules: rules } });
    expect(patch.status, patch.text).to.equal(200);
    const live = (await o.mint({ permission: 'SEND' })).token;
    const test = (await o.mint({ permission: 'SEND', mode: 'test' })).token;
    return { id: o.organization.id, admin: o.key.token, live, test, domain };
  }
  type Org = Awaited<ReturnType<typeof org>>;

  async function send(web: TestApi, o: Org, token: string, to: string, extra: Record<string, unknown> = {}) {
    return await web.request('POST', '/emails', {
      token,
      body: { from: `hello@${o.domain}`, to, subject: 'Hi', text: 'Hello', ...extra },
    });
  }

  /** Sends and waits until the worker has recorded the message's outcome. */
  async function sendAndSettle(o: Org, token: string, to: string): Promise<string> {
    const res = await send(api, o, token, to);
    expect(res.status, res.text).to.equal(200);
    const id = res.json.id as string;
    await waitFor(`settled ${to}`, async () => {
      const [e] = await api.deps.sql<{ status: string }[]>`select status from emails where id = ${id}`;
      const [r] = await api.deps.sql<{ status: string }[]>`select status from email_recipients where email_id = ${id}`;
      return e!.status === 'sent' && ['delivered', 'bounced'].includes(r!.status);
    });
    return id;
  }

  const orgRow = async (o: Org) => (await api.request('GET', '/organization', { token: o.admin })).json;

  it('pauses on a crossed bounce rate with enough volume, on every web process, holds and releases mail', async () => {
    const o = await org([{ metric: 'bounce', threshold: 40, min_volume: 5, window_days: 1, action: 'pause' }]);
    // api2 caches the org (not paused) now.
    expect((await send(api2, o, o.live, 'warm@dest.test')).status).to.equal(200);
    await sendAndSettle(o, o.live, 'ok1@dest.test');
    await sendAndSettle(o, o.live, 'nobody1@dest.test');
    await sendAndSettle(o, o.live, 'nobody2@dest.test');
    // 2 bounced of 4 sent (50 %) is over 40 %, but below min_volume 5: nothing happens.
    expect((await orgRow(o)).sending_paused).to.equal(false);

    // A message waiting for its time when the pause comes.
    // Scheduled an hour ahead, and brought forward once the pause is in place: however slow the
    // machine, it is still waiting when the organization is paused.
    const waiting = await send(api, o, o.live, 'waiting@dest.test', {
      scheduled_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(waiting.status).to.equal(200);
    await sendAndSettle(o, o.live, 'nobody3@dest.test'); // 3 of 5 (60 %), volume reached
    // The rules run once the bounce is recorded, which the message's status may show first.
    const paused = await waitFor('the organization paused', async () => {
      const row = await orgRow(o);
      return row.sending_paused === true ? row : null;
    });
    expect(paused.sending_paused_reason).to.match(/^alert rule: bounce rate 60\.00% reached the 40% threshold/);
    await waitFor('ALERT_RULE_PAUSED_SENDING', async () =>
      logLines.some((l) => l.event === 'ALERT_RULE_PAUSED_SENDING' && l.orgId === o.id),
    );

    for (const web of [api, api2]) {
      const refused = await send(web, o, o.live, 'after@dest.test');
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.json.error.code).to.equal('sending_paused');
    }
    const moved = await api.request('PATCH', `/emails/${waiting.json.id}`, {
      token: o.live,
      body: { scheduled_at: new Date(Date.now() + 500).toISOString() },
    });
    expect(moved.status, moved.text).to.equal(200);
    const held = await waitFor('scheduled message held', async () => {
      const [r] = await api.deps.sql<{ status: string; wait_reason: string | null }[]>`
        select status, wait_reason from email_recipients where email_id = ${waiting.json.id}`;
      return r!.wait_reason === 'sending paused' ? r : null;
    });
    expect(held.status).to.equal('queued');

    const resume = await api.request('PATCH', '/organization', { token: o.admin, body: { sending_paused: false } });
    expect(resume.status).to.equal(200);
    await waitFor('held message released', async () => {
      const [r] = await api.deps.sql<{ status: string }[]>`
        select status from email_recipients where email_id = ${waiting.json.id}`;
      return r!.status === 'delivered';
    });
    expect((await send(api2, o, o.live, 'again@dest.test')).status).to.equal(200);
  });

  it('`notify` only logs ALERT_RULE_CROSSED and keeps sending', async () => {
    const o = await org([{ metric: 'bounce', threshold: 10, min_volume: 2, window_days: 1, action: 'notify' }]);
    await sendAndSettle(o, o.live, 'fine@dest.test');
    await sendAndSettle(o, o.live, 'nobody4@dest.test');
    // The rules are checked after the bounce is recorded, so the line may follow the settling.
    await waitFor('ALERT_RULE_CROSSED', async () =>
      logLines.some((l) => l.event === 'ALERT_RULE_CROSSED' && l.orgId === o.id),
    );
    expect((await orgRow(o)).sending_paused).to.equal(false);
    expect((await send(api, o, o.live, 'still@dest.test')).status).to.equal(200);
  });

  it('never counts test mode', async () => {
    const o = await org([{ metric: 'bounce', threshold: 10, min_volume: 2, window_days: 1, action: 'pause' }]);
    for (let i = 0; i < 3; i++) await sendAndSettle(o, o.test, `bounced${i}@dest.test`);
    const [b] = await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from events where org_id = ${o.id} and type = 'email.bounced' and mode = 'test'`;
    expect(b!.n).to.equal(3);
    expect((await orgRow(o)).sending_paused).to.equal(false);
    expect(logLines.some((l) => l.orgId === o.id && /ALERT_RULE/.test(l.event ?? ''))).to.equal(false);
  });
});
