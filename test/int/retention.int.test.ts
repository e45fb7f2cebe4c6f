// Retention (DESIGN §15, issue 16 item 3) with back-dated rows: PATCH /organization validates
// `retention`; the purge empties the content of expired messages in a terminal state (bodies,
// raw MIME, stored raw messages, attachments) and of processed inbound messages, deletes expired
// events (once counted and fanned out) and ended webhook deliveries, and leaves everything else —
// messages still in flight, recent rows, metrics rollups — as it was. GET /emails/{id} then
// answers the metadata with "content": "purged". The repeatable job runs the same purge.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { newId } from '../../shared/ids.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { purgeExpired, retentionConsumerWith, startRetentionWorker } from '../../workers/retention.js';
import { seedEmail } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);

describe('retention purge', function () {
  this.timeout(60_000);
  let api: TestApi;
  let deps: WorkerDeps;
  let org: SeededOrg;
  let domain: { id: string; name: string };

  before(async () => {
    api = await startApi();
    deps = workerDepsFor(api);
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'keep.test' }] });
    domain = { id: org.domains['keep.test']!.id, name: 'keep.test' };
  });

  after(async () => {
    await deps.close();
    await api.close();
  });

  const sql = () => api.deps.sql;

  /** A message of `days` ago whose recipients are in `status` (and the message in `emailStatus`). */
  async function message(days: number, emailStatus: string, status: string) {
    const e = await seedEmail(sql(), {
      orgId: org.organization.id,
      domainId: domain.id,
      domainName: domain.name,
      to: ['ann@dest.test'],
      createdAt: ago(days),
    });
    await sql()`update emails set status = ${emailStatus}, raw_mime = ${Buffer.from('raw mime')} where id = ${e.id}`;
    await sql()`update email_recipients set status = ${status} where email_id = ${e.id}`;
    await sql()`insert into email_attachments (email_id, position, filename, size, content)
      values (${e.id}, 0, 'a.txt', 5, ${Buffer.from('hello')})`;
    await sql()`insert into email_raw_messages (email_id, raw) values (${e.id}, ${Buffer.from('stored raw')})`;
    return e.id;
  }

  async function event(days: number, done: boolean) {
    const id = newId('evt');
    const at = done ? ago(days) : null;
    await sql()`insert into events (id, org_id, mode, type, dedupe_key, created_at, metrics_counted_at, webhooks_fanned_at)
      values (${id}, ${org.organization.id}, 'live', 'email.sent', ${id}, ${ago(days)}, ${at}, ${at})`;
    return id;
  }

  async function delivery(webhookId: string, days: number, status: string) {
    const id = newId('dlv');
    await sql()`insert into webhook_deliveries (id, webhook_id, org_id, event_id, event_type, body, status, created_at)
      values (${id}, ${webhookId}, ${org.organization.id}, ${newId('evt')}, 'email.sent', ${Buffer.from('{}')}, ${status}, ${ago(days)})`;
    await sql()`insert into webhook_attempts (delivery_id, attempt, status_code) values (${id}, 1, 200)`;
    return id;
  }

  async function inbound(days: number) {
    const id = newId('inb');
    await sql()`insert into inbound_messages (id, org_id, domain_id, source, raw, size, status, text, html, created_at)
      values (${id}, ${org.organization.id}, ${domain.id}, 'mx', ${Buffer.from('From: x\r\n\r\nbody')}, 16, 'processed', 'body', '<p>body</p>', ${ago(days)})`;
    await sql()`insert into inbound_attachments (inbound_id, position, content_type, size, content, id)
      values (${id}, 0, 'text/plain', 3, ${Buffer.from('abc')}, ${newId('att')})`;
    return id;
  }

  const exists = async (table: string, column: string, id: string) =>
    (await sql().unsafe(`select count(*)::int as n from ${table} where ${column} = $1`, [id]))[0]!.n as number;

  it('validates retention in PATCH /organization and shows it in GET /organization', async () => {
    const token = org.key.token;
    const got = await api.request('GET', '/organization', { token });
    expect(got.json.retention).to.deep.equal({ content_days: 30, events_days: 90, request_log_days: 30 });
    for (const bad of [{ content_days: 0 }, { events_days: 3651 }, { content_days: 'x' }, { other: 1 }]) {
      expectError(
        await api.request('PATCH', '/organization', { token, body: { retention: bad } }),
        422,
        'validation_error',
      );
    }
    const res = await api.request('PATCH', '/organization', {
      token,
      body: { retention: { content_days: 10, events_days: 20, request_log_days: 7 } },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.retention).to.deep.equal({ content_days: 10, events_days: 20, request_log_days: 7 });
  });

  it('purges expired content and logs, never a message in flight, and keeps the rollups', async () => {
    const old = await message(15, 'sent', 'delivered');
    const oldToo = await message(12, 'failed', 'bounced');
    const queued = await message(15, 'queued', 'queued');
    const delayed = await message(15, 'sent', 'delivery_delayed');
    const recent = await message(5, 'sent', 'delivered');
    const oldEvent = await event(25, true);
    const uncounted = await event(25, false);
    const recentEvent = await event(5, true);
    const hook = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: 'https://hooks.example.com/r', events: ['email.sent'] },
    });
    const ended = await delivery(hook.json.id, 25, 'succeeded');
    const pending = await delivery(hook.json.id, 25, 'pending');
    const recentDelivery = await delivery(hook.json.id, 5, 'failed');
    const oldInbound = await inbound(15);
    const recentInbound = await inbound(5);
    await sql()`insert into metrics_daily (org_id, day, sent) values (${org.organization.id}, ${ago(25).toISOString().slice(0, 10)}, 7)`;

    // Nothing within a spent budget; then small batches until done.
    expect((await purgeExpired(deps, org.organization.id, { budgetMs: 0 })).complete).to.equal(false);
    expect(await exists('email_attachments', 'email_id', old)).to.equal(1);
    const counts = await purgeExpired(deps, org.organization.id, { batchSize: 1, pauseMs: 0 });
    expect(counts).to.deep.equal({
      emails: 2,
      inbound: 1,
      events: 1,
      webhookDeliveries: 1,
      requestLogs: 0,
      complete: true,
    });

    for (const id of [old, oldToo]) {
      const [e] = await sql()<{ html: string | null; text: string | null; raw_mime: Buffer | null; purged: boolean }[]>`
        select html, text, raw_mime, content_purged_at is not null as purged from emails where id = ${id}`;
      expect(e).to.deep.equal({ html: null, text: null, raw_mime: null, purged: true });
      expect(await exists('email_attachments', 'email_id', id)).to.equal(0);
      expect(await exists('email_raw_messages', 'email_id', id)).to.equal(0);
    }
    for (const id of [queued, delayed, recent]) {
      const [e] = await sql()<{ html: string | null; purged: boolean }[]>`
        select html, content_purged_at is not null as purged from emails where id = ${id}`;
      expect(e, id).to.deep.equal({ html: '<p>Hi there</p>', purged: false });
      expect(await exists('email_attachments', 'email_id', id)).to.equal(1);
      expect(await exists('email_raw_messages', 'email_id', id)).to.equal(1);
    }
    expect(await exists('events', 'id', oldEvent)).to.equal(0);
    expect(await exists('events', 'id', uncounted)).to.equal(1);
    expect(await exists('events', 'id', recentEvent)).to.equal(1);
    expect(await exists('webhook_deliveries', 'id', ended)).to.equal(0);
    expect(await exists('webhook_attempts', 'delivery_id', ended)).to.equal(0);
    expect(await exists('webhook_deliveries', 'id', pending)).to.equal(1);
    expect(await exists('webhook_deliveries', 'id', recentDelivery)).to.equal(1);
    const [inb] = await sql()<{ raw: Buffer; text: string | null }[]>`
      select raw, text from inbound_messages where id = ${oldInbound}`;
    expect(inb!.raw.length).to.equal(0);
    expect(inb!.text).to.equal(null);
    expect(await exists('inbound_attachments', 'inbound_id', oldInbound)).to.equal(0);
    expect(await exists('inbound_attachments', 'inbound_id', recentInbound)).to.equal(1);
    const [m] = await sql()<{ sent: string }[]>`select sent from metrics_daily where org_id = ${org.organization.id}`;
    expect(Number(m!.sent)).to.equal(7);

    // The API: metadata and "content": "purged"; the raw message is gone.
    const detail = await api.request('GET', `/emails/${old}`, { token: org.key.token });
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.json).to.deep.include({ id: old, subject: 'Hello', html: null, text: null, content: 'purged' });
    expect(detail.json.recipients[0].status).to.equal('delivered');
    expectError(await api.request('GET', `/emails/${old}/raw`, { token: org.key.token }), 404, 'not_found');
    const kept = await api.request('GET', `/emails/${recent}`, { token: org.key.token });
    expect(kept.json).not.to.have.property('content');
    expect(kept.json.html).to.equal('<p>Hi there</p>');

    // A second run finds nothing left.
    const again = await purgeExpired(deps, org.organization.id, { pauseMs: 0 });
    expect(again).to.deep.equal({
      emails: 0,
      inbound: 0,
      events: 0,
      webhookDeliveries: 0,
      requestLogs: 0,
      complete: true,
    });
  });

  it('runs as a job of the retention queue', async () => {
    const id = await message(40, 'canceled', 'canceled');
    const worker: Worker = startRetentionWorker(deps);
    try {
      await deps.queues.retention.add('purge', { orgId: org.organization.id });
      await waitFor('the purge job', async () => {
        const [e] = await sql()<{ purged: boolean }[]>`
          select content_purged_at is not null as purged from emails where id = ${id}`;
        return e!.purged || null;
      });
    } finally {
      await worker.close();
    }
  });

  it('puts its schedule back while running when Redis lost it (no worker restart)', async () => {
    const worker = await retentionConsumerWith(200).start(deps);
    try {
      const scheduled = async () => (await deps.queues.retention.getJobScheduler('retention-purge')) !== undefined;
      expect(await scheduled()).to.equal(true);
      // What a Redis restarted without its data (or flushed) leaves: no scheduler.
      await deps.queues.retention.removeJobScheduler('retention-purge');
      expect(await scheduled()).to.equal(false);
      await waitFor('the schedule put back', scheduled, 5000);
    } finally {
      await worker.close();
    }
  });
});
