// Every message reaches a terminal state and says why it waits: GET /emails/{id} per recipient
// (scheduled, paused, over cap, retry at T after reply R, last SMTP reply), the retry schedule of
// DELIVERY_RETRY_SECONDS and its end after DELIVERY_MAX_AGE_HOURS (soft bounce General), and
// the sweeper re-enqueueing messages whose job was lost, in-process and in the real worker process.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { clearPrefix, testPrefix } from '../helpers/redis-prefix.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const RETRY = [1, 2.5];
const MAX_AGE_HOURS = 0.002; // 7.2 s

interface ApiRecipient {
  email: string;
  status: string;
  wait_reason: string | null;
  last_response: string | null;
}

describe('delivery: wait reasons, retries, sweeper', function () {
  this.timeout(60_000);
  let api: TestApi;
  let sink: Sink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers | null;

  const env = () => ({
    OUTBOUND_PORT: String(sink.port),
    DNS_SERVERS: dns.server,
    DELIVERY_RETRY_SECONDS: RETRY.join(','),
    DELIVERY_MAX_AGE_HOURS: String(MAX_AGE_HOURS),
    DELIVERY_PAUSE_RECHECK_SECONDS: '0.3',
    DELIVERY_SWEEP_GRACE_SECONDS: '0.5',
  });

  before(async () => {
    api = await startApi();
    sink = await startSink((rcpt) =>
      rcpt.startsWith('busy') ? { code: 451, message: '4.2.1 mailbox busy, try later' } : null,
    );
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    deps = workerDepsFor(api, env());
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0.3 });
  });

  after(async () => {
    await worker?.close();
    await deps.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  /** A fresh org (own caps and pause) with a verified, DKIM-keyed domain and a SEND key. */
  let orgs = 0;
  let domainName = '';
  async function newOrg(): Promise<{ org: SeededOrg; token: string; admin: string; domainId: string }> {
    domainName = `acme${++orgs}.test`; // a verified domain name belongs to one org
    const org = await seedOrg(api.deps.sql, { domains: [{ name: domainName }] });
    const domainId = org.domains[domainName]!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    await giveDkimKey(api.deps.sql, domainId);
    const key = await org.mint({ permission: 'SEND' });
    return { org, token: key.token, admin: org.key.token, domainId };
  }

  async function post(token: string, to: string[], extra: Record<string, unknown> = {}): Promise<string> {
    const res = await api.request('POST', '/emails', {
      token,
      body: { from: `Acme <hello@${domainName}>`, to, subject: 'Hi', text: 'Hello', ...extra },
    });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  }

  async function recipients(token: string, id: string): Promise<ApiRecipient[]> {
    const res = await api.request('GET', `/emails/${id}`, { token });
    expect(res.status, res.text).to.equal(200);
    return res.json.recipients as ApiRecipient[];
  }

  /** Polled in the database: polling the API would run into the key's request rate limit. */
  const rows = async (id: string) =>
    await api.deps.sql<{ status: string; wait_reason: string | null }[]>`
      select status, wait_reason from email_recipients where email_id = ${id} order by id`;
  const rowStatus = async (id: string) => (await rows(id))[0]!.status;
  /** Waits (in the database) for a state, then reads it through GET /emails/{id}. */
  async function whenThen(token: string, id: string, ok: (r: ApiRecipient[]) => boolean, what: string) {
    await waitFor(what, async () => ok((await rows(id)) as unknown as ApiRecipient[]));
    const list = await recipients(token, id);
    expect(ok(list), `${what} (API)`).to.equal(true);
    return list;
  }

  const deliveredAt = async (id: string) =>
    (
      await api.deps.sql<{ delivered_at: Date | null }[]>`
      select delivered_at from email_recipients where email_id = ${id}`
    )[0]!.delivered_at;

  it('shows a scheduled recipient as scheduled, then delivers it at its time', async () => {
    const { token } = await newOrg();
    const at = new Date(Date.now() + 2000);
    const id = await post(token, ['later@dest.test'], { scheduled_at: at.toISOString() });
    const [r] = await recipients(token, id);
    expect(r).to.deep.include({ status: 'scheduled', wait_reason: `scheduled for ${at.toISOString()}` });
    await waitFor('scheduled delivery', async () => (await rowStatus(id)) === 'delivered');
    expect((await deliveredAt(id))!.getTime()).to.be.at.least(at.getTime());
    const final = (await recipients(token, id))[0]!;
    expect(final.wait_reason).to.equal(null);
    expect(final.last_response).to.match(/^250 /);
  });

  it('shows a paused org’s recipient as "sending paused" and sends it once resumed', async () => {
    const { token, admin } = await newOrg();
    const id = await post(token, ['held@dest.test'], { scheduled_at: new Date(Date.now() + 1000).toISOString() });
    expect(
      (await api.request('PATCH', '/organization', { token: admin, body: { sending_paused: true } })).status,
    ).to.equal(200);
    const [held] = await whenThen(token, id, ([r]) => r!.wait_reason === 'sending paused', 'paused wait reason');
    expect(held!.status).to.equal('queued');
    expect(
      (await api.request('PATCH', '/organization', { token: admin, body: { sending_paused: false } })).status,
    ).to.equal(200);
    await waitFor('delivery after resume', async () => (await rowStatus(id)) === 'delivered');
  });

  it('shows a recipient over the daily cap as waiting until the next UTC midnight', async () => {
    const { token, admin } = await newOrg();
    await api.request('PATCH', '/organization', { token: admin, body: { daily_cap: 1 } });
    const id = await post(token, ['cap1@dest.test', 'cap2@dest.test']);
    const midnight = new Date((Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000).toISOString();
    const rs = await whenThen(
      token,
      id,
      (list) => list.some((r) => r.status === 'delivered') && list.some((r) => r.wait_reason !== null),
      'one delivered, one over the cap',
    );
    const over = rs.find((r) => r.status !== 'delivered')!;
    expect(over).to.deep.include({ status: 'queued', wait_reason: `over daily cap until ${midnight}` });
  });

  it('shows "retry at T after R" with the last SMTP reply, follows DELIVERY_RETRY_SECONDS, then bounces soft', async () => {
    const { token } = await newOrg();
    const id = await post(token, ['busy@dest.test']);
    const [r] = await whenThen(token, id, ([x]) => x!.status === 'delivery_delayed', 'first deferral');
    expect(r!.wait_reason).to.match(/^retry at \d{4}-\d\d-\d\dT\S+Z after: 451 4\.2\.1 mailbox busy, try later$/);
    expect(r!.last_response).to.equal('451 4.2.1 mailbox busy, try later');

    // Polled in the database: the key's request rate limit would not allow polling the API this long.
    await waitFor(
      'expiry',
      async () =>
        (await api.deps.sql`select 1 from email_recipients where email_id = ${id} and status = 'bounced'`).length === 1,
      30_000,
    );
    expect((await recipients(token, id))[0]).to.deep.include({ status: 'bounced', wait_reason: null });
    const events = await api.deps.sql<
      { type: string; bounce_type: string | null; detail: string | null; created_at: Date }[]
    >`
      select type, bounce_type, detail, created_at from events where email_id = ${id} order by id`;
    const types = events.map((e) => e.type);
    expect(types[0]).to.equal('email.sent');
    expect(types.at(-1)).to.equal('email.bounced');
    expect(events.at(-1)).to.deep.include({ bounce_type: 'soft', detail: 'General' });
    const delays = events.filter((e) => e.type === 'email.delivery_delayed');
    expect(delays.length).to.be.at.least(2);
    // Attempt k+1 starts no sooner than schedule[k] after attempt k (the last value repeats).
    const attempts = [...delays, events.at(-1)!].map((e) => e.created_at.getTime());
    for (let k = 0; k + 1 < attempts.length; k++) {
      const planned = RETRY[Math.min(k, RETRY.length - 1)]! * 1000;
      expect(attempts[k + 1]! - attempts[k]!, `gap after attempt ${k + 1}`).to.be.at.least(planned - 50);
    }
    const [row] = await api.deps.sql<{ attempts: number; created: Date; bounced: Date }[]>`
      select r.attempts, e.created_at as created, r.last_event_at as bounced
      from email_recipients r join emails e on e.id = r.email_id where r.email_id = ${id}`;
    expect(row!.attempts).to.equal(delays.length + 1);
    expect(row!.bounced.getTime() - row!.created.getTime()).to.be.at.least(MAX_AGE_HOURS * 3_600_000);
    expect(sink.received.filter((m) => m.rcptTo.includes('busy@dest.test'))).to.have.length(0);
  });

  it('sweeps an email stored without a job (API enqueue failed after commit) to delivery, deleting nothing', async () => {
    const { org, token, domainId } = await newOrg();
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId,
      domainName,
      to: ['orphan@dest.test'],
    });
    await waitFor('swept delivery', async () => (await rowStatus(e.id)) === 'delivered');
    expect((await recipients(token, e.id))[0]!.status).to.equal('delivered');
    expect(sink.received.filter((m) => m.rcptTo.includes('orphan@dest.test'))).to.have.length(1);
    const [n] = await api.deps.sql<{ n: number }[]>`select count(*)::int as n from emails where id = ${e.id}`;
    expect(n!.n).to.equal(1);
  });

  it('sweeps a scheduled email whose delayed job vanished, sending it at its time', async () => {
    const { token } = await newOrg();
    const at = new Date(Date.now() + 1500);
    const id = await post(token, ['vanished@dest.test'], { scheduled_at: at.toISOString() });
    const job = await api.deps.queues.delivery.getJob(id);
    expect(job, 'the API’s delayed job').to.not.equal(undefined);
    await job!.remove();
    await waitFor('swept scheduled delivery', async () => (await rowStatus(id)) === 'delivered');
    expect((await deliveredAt(id))!.getTime()).to.be.at.least(at.getTime());
  });

  it('sweeps in the worker process started by workers/main.ts (sweep job registered at start)', async () => {
    await worker!.close();
    worker = null;
    const { org, token, domainId } = await newOrg();
    // The child gets its own Redis prefix: only its own start can have registered the sweep.
    const prefix = testPrefix();
    const child = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
      env: {
        ...process.env,
        ...env(),
        DATABASE_URL: api.db.url,
        REDIS_URL: api.config.redisUrl,
        REDIS_PREFIX: prefix,
        SECRET_KEY: api.config.secretKey,
        WORKER_QUEUES: 'delivery',
        DELIVERY_SWEEP_SECONDS: '0.5',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const stop = track('worker process', async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    });
    try {
      const e = await seedEmail(api.deps.sql, {
        orgId: org.organization.id,
        domainId,
        domainName,
        to: ['process@dest.test'],
      });
      await waitFor('delivery by the process', async () => (await rowStatus(e.id)) === 'delivered', 30_000);
      expect(out).to.contain('DELIVERY_SWEEP_REQUEUED');
      expect((await recipients(token, e.id))[0]!.status).to.equal('delivered');
    } finally {
      await stop();
      await clearPrefix(prefix);
    }
  });
});
