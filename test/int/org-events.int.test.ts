// Organization events end to end (DESIGN §15, issue 16 item 2): a pause and a resume through
// PATCH /organization, a domain that verifies and then stops verifying (real DNS answers from the
// test resolver), and a webhook endpoint disabled after failing reach a real receiver as signed
// webhooks (same envelope and headers as email.*), only on endpoints that subscribe to them, and
// each is stored as an email to the organization's admins from SYSTEM_FROM (source `system`).
// Without a verified sender domain no email is stored and the worker logs the code.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import type { Worker } from 'bullmq';
import { pino } from 'pino';
import { verify } from '../../shared/webhooks/signing.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { startWebhookFanout } from '../../workers/webhook-fanout.js';
import { publishRecords, startDns, type ApiRecord, type TestDns } from '../helpers/dns.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';
import { jsonParam } from '../../shared/db/params.js';

const MX_HOST = 'mx.tern.test';
const ORG_TYPES = [
  'organization.paused',
  'organization.resumed',
  'webhook.disabled',
  'domain.failed',
  'domain.verified',
];

describe('organization events: webhooks and admin emails (issue 16)', function () {
  this.timeout(60_000);
  let api: TestApi;
  let dns: TestDns;
  let receiver: Receiver;
  let failing: Receiver;
  let deps: WorkerDeps;
  let workers: Worker[];
  let org: SeededOrg;
  let secret: string;
  let emailOnlyHook: string;
  const logLines: { event?: string }[] = [];

  before(async () => {
    dns = await startDns();
    api = await startApi({ env: { DNS_SERVERS: dns.server, MX_HOST } });
    receiver = await startReceiver(() => 200);
    failing = await startReceiver(() => 500);
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'ops-events.test' }] });
    const base = workerDepsFor(api, { SYSTEM_FROM: 'Tern Alerts <alerts@ops-events.test>' });
    const logs = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
        cb();
      },
    });
    deps = { ...base, logger: pino({ level: 'info' }, logs) };
    workers = [startWebhookFanout(deps, { drainEveryMs: 200 }), startWebhookDelivery(deps, { schedule: [] })];
    const hook = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: `${receiver.url}/org`, events: ORG_TYPES },
    });
    expect(hook.status, hook.text).to.equal(201);
    secret = hook.json.signing_secret;
    const other = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: `${receiver.url}/email-only`, events: ['email.sent'] },
    });
    emailOnlyHook = other.json.id;
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await deps.close();
    await receiver.close();
    await failing.close();
    await api.close();
    await dns.close();
  });

  async function nextEvent(type: string) {
    const [r] = await receiver.waitForRequests(1, (x) => x.headers['tern-event-type'] === type, 15_000);
    expect(r!.path).to.equal('/org');
    expect(r!.headers['content-type']).to.equal('application/json');
    expect(r!.headers['user-agent']).to.equal('tern-webhooks/1');
    expect(r!.headers['tern-delivery-id']).to.be.a('string');
    expect(verify(r!.raw, r!.headers['tern-signature'] as string, secret)).to.equal(true);
    const body = JSON.parse(r!.raw.toString('utf8'));
    expect(Object.keys(body)).to.deep.equal(['type', 'created_at', 'data']);
    expect(body.type).to.equal(type);
    expect(body.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.data.organization_id).to.equal(org.organization.id);
    return body.data as Record<string, unknown>;
  }

  async function adminEmail(type: string) {
    return await waitFor(`the admin email of ${type}`, async () => {
      const rows = await api.deps.sql<
        { to_addresses: string[]; from_address: string; subject: string; text: string }[]
      >`
        select to_addresses, from_address, subject, text from emails
        where org_id = ${org.organization.id} and source = 'system' and tags @> ${jsonParam(api.deps.sql, [{ name: 'event', value: type.replace('.', '_') }])}`;
      return rows.length > 0 ? rows : null;
    });
  }

  it('pause and resume: organization.paused / organization.resumed, signed, and an email to each admin', async () => {
    const paused = await api.request('PATCH', '/organization', {
      token: org.key.token,
      body: { sending_paused: true, sending_paused_reason: 'Investigating complaints' },
    });
    expect(paused.status, paused.text).to.equal(200);
    const data = await nextEvent('organization.paused');
    expect(data.reason).to.equal('Investigating complaints');
    expect(data.by).to.deep.equal({ type: 'key', id: org.key.id });
    const mails = await adminEmail('organization.paused');
    expect(mails).to.have.length(1);
    expect(mails[0]!.to_addresses).to.deep.equal([org.user.email]);
    expect(mails[0]!.from_address).to.equal('Tern Alerts <alerts@ops-events.test>');
    expect(mails[0]!.subject).to.contain('Sending paused');
    expect(mails[0]!.text).to.contain('Investigating complaints');

    await api.request('PATCH', '/organization', { token: org.key.token, body: { sending_paused: false } });
    await nextEvent('organization.resumed');
    await adminEmail('organization.resumed');
    // The endpoint that subscribes to email.* only got none of them.
    expect(receiver.received.filter((r) => r.path === '/email-only')).to.have.length(0);
    expect(emailOnlyHook).to.match(/^wh_/);
  });

  it('a domain that verifies and then fails its DNS check: domain.verified, then domain.failed', async () => {
    const created = await api.request('POST', '/domains', { token: org.key.token, body: { name: 'dns-flip.test' } });
    expect(created.status, created.text).to.equal(201);
    const records = created.json.records as ApiRecord[];
    publishRecords(dns, records);
    const ok = await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
    expect(ok.json.status, ok.text).to.equal('verified');
    const verified = await nextEvent('domain.verified');
    expect(verified).to.deep.include({ domain_id: created.json.id, domain: 'dns-flip.test' });

    const dkim = records.find((r) => r.record === 'DKIM')!;
    dns.txt(dkim.name, ['v=DKIM1; k=rsa; p=AAAA']);
    const bad = await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
    expect(bad.json.status, bad.text).to.equal('failed');
    const failed = await nextEvent('domain.failed');
    expect(failed.domain).to.equal('dns-flip.test');
    expect((failed.records as { record: string }[]).map((r) => r.record)).to.include('DKIM');
    await adminEmail('domain.failed');
  });

  it('an endpoint disabled after failing: webhook.disabled to the other endpoints', async () => {
    const hook = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: `${failing.url}/down`, events: ['email.sent'] },
    });
    // Failing for longer than the disable threshold (5 days) already.
    await api.deps.sql`update webhooks set failing_since = now() - interval '6 days' where id = ${hook.json.id}`;
    const test = await api.request('POST', `/webhooks/${hook.json.id}/test`, { token: org.key.token, body: {} });
    expect(test.status, test.text).to.equal(202);
    const data = await nextEvent('webhook.disabled');
    expect(data.webhook_id).to.equal(hook.json.id);
    expect(data.url).to.equal(`${failing.url}/down`);
    expect(data.reason).to.match(/^failing continuously since /);
    const after = await api.request('GET', `/webhooks/${hook.json.id}`, { token: org.key.token });
    expect(after.json.status).to.equal('disabled');
    await adminEmail('webhook.disabled');
  });

  it('no email when SYSTEM_FROM is not on a verified domain of the organization (logged)', async () => {
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'elsewhere-ops.test' }] });
    await api.request('PATCH', '/organization', { token: other.key.token, body: { sending_paused: true } });
    await waitFor('the unverified-sender log line', () =>
      logLines.some((l) => l.event === 'ORG_EVENT_MAIL_SENDER_UNVERIFIED') ? true : null,
    );
    const [row] = await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from emails where org_id = ${other.organization.id} and source = 'system'`;
    expect(row!.n).to.equal(0);
  });
});
