// Scheduled DNS re-checks of domains (issue 16 item 2; docs/api/domains.md "Re-checks") against
// the test DNS server: a verified domain whose DKIM record disappears is marked failed, with one
// domain.failed webhook and admin email, on the second failing re-check and not the first; a
// lookup that does not answer changes nothing (verified_at, the warm-up ramp, included); a failed
// domain that passes again fires domain.verified; two sweeps running at once check each domain
// once. The sweeps are called directly; each test makes only its own domains due.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { claimDueDomains } from '../../shared/db/domain-recheck.js';
import { RECHECK_CONFIRM_SECONDS, RECHECK_LEASE_SECONDS, recheckDomain } from '../../shared/domains/recheck.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { recheckDueDomains, startDomainRechecks } from '../../workers/domain-recheck.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { startWebhookFanout } from '../../workers/webhook-fanout.js';
import { publishRecords, startDns, type ApiRecord, type TestDns } from '../helpers/dns.js';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';
import { jsonParam } from '../../shared/db/params.js';

const MX_HOST = 'mx.tern.test';

interface Row {
  status: string;
  verified_at: Date | null;
  last_checked_at: Date | null;
  recheck_failures: number;
  /** Seconds from the database's now to next_check_at. */
  due_in: number | null;
  records: { record: string; status: string }[];
}

describe('domains: scheduled DNS re-checks (issue 16)', function () {
  this.timeout(120_000);
  let api: TestApi;
  let dns: TestDns;
  let receiver: Receiver;
  let deps: WorkerDeps;
  let workers: Worker[];
  let org: SeededOrg;

  before(async () => {
    dns = await startDns();
    api = await startApi({ env: { DNS_SERVERS: dns.server, MX_HOST } });
    receiver = await startReceiver(() => 200);
    // The sender of the admin emails: verified without a DNS check, so never re-checked itself.
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'recheck-ops.test' }] });
    deps = workerDepsFor(api, { DNS_SERVERS: dns.server, MX_HOST, SYSTEM_FROM: 'Tern <alerts@recheck-ops.test>' });
    workers = [startWebhookFanout(deps, { drainEveryMs: 200 }), startWebhookDelivery(deps, { schedule: [] })];
    const hook = await api.request('POST', '/webhooks', {
      token: org.key.token,
      body: { url: `${receiver.url}/org`, events: ['domain.failed', 'domain.verified'] },
    });
    expect(hook.status, hook.text).to.equal(201);
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await deps.close();
    await receiver.close();
    await api.close();
    await dns.close();
  });

  /** Adds the domain, publishes its records and verifies it by hand. */
  async function verifiedDomain(name: string): Promise<{ id: string; records: ApiRecord[] }> {
    const created = await api.request('POST', '/domains', { token: org.key.token, body: { name } });
    expect(created.status, created.text).to.equal(201);
    const records = created.json.records as ApiRecord[];
    publishRecords(dns, records);
    const ok = await api.request('POST', `/domains/${created.json.id}/verify`, { token: org.key.token });
    expect(ok.json.status, ok.text).to.equal('verified');
    return { id: created.json.id, records };
  }

  /** Makes these domains due now and every other one due tomorrow. */
  async function onlyDue(ids: string[]): Promise<void> {
    await api.deps.sql`
      update domains set next_check_at = case when id = any(${ids}) then now() - interval '1 second'
                                              else now() + interval '1 day' end`;
  }

  async function row(id: string): Promise<Row> {
    const [r] = await api.deps.sql<Row[]>`
      select status, verified_at, last_checked_at, recheck_failures, records,
             extract(epoch from next_check_at - now())::float8 as due_in
      from domains where id = ${id}`;
    return r!;
  }

  async function events(id: string, type: string) {
    return await api.deps.sql<{ id: string; data: { records?: { record: string }[] } }[]>`
      select id, data from events where domain_id = ${id} and type = ${type} order by id`;
  }

  const about = (domainId: string, type: string) => (r: Received) =>
    r.headers['tern-event-type'] === type && JSON.parse(r.raw.toString('utf8')).data.domain_id === domainId;

  async function adminEmails(eventId: string) {
    return await api.deps.sql<{ subject: string }[]>`
      select subject from emails where org_id = ${org.organization.id} and source = 'system'
        and tags @> ${jsonParam(api.deps.sql, [{ name: 'event_id', value: eventId }])}`;
  }

  it('a DKIM record that disappears: domain.failed and one admin email after the second failing re-check only', async () => {
    const d = await verifiedDomain('dkim-gone.test');
    const verifiedAt = (await row(d.id)).verified_at;
    const dkim = d.records.find((r) => r.record === 'DKIM')!;
    dns.remove(dkim.name);

    await onlyDue([d.id]);
    const first = await recheckDueDomains(deps);
    expect(first).to.deep.include({ checked: 1, suspect: 1, failed: 0 });
    const suspect = await row(d.id);
    expect(suspect.status).to.equal('verified');
    expect(suspect.verified_at).to.deep.equal(verifiedAt);
    expect(suspect.recheck_failures).to.equal(1);
    // The confirming check is scheduled RECHECK_CONFIRM_SECONDS later, not a whole interval.
    expect(suspect.due_in).to.be.within(RECHECK_CONFIRM_SECONDS - 120, RECHECK_CONFIRM_SECONDS + 1);
    expect(await events(d.id, 'domain.failed')).to.have.length(0);

    await onlyDue([d.id]);
    const second = await recheckDueDomains(deps);
    expect(second).to.deep.include({ checked: 1, failed: 1 });
    const failed = await row(d.id);
    expect(failed.status).to.equal('failed');
    expect(failed.verified_at).to.equal(null);
    expect(failed.recheck_failures).to.equal(0);
    expect(failed.records.find((r) => r.record === 'DKIM')!.status).to.equal('failed');
    expect(failed.due_in).to.be.within(6 * 3600 - 120, 6 * 3600 + 1);
    const [ev] = await events(d.id, 'domain.failed');
    expect(ev!.data.records!.map((r) => r.record)).to.deep.equal(['DKIM']);

    const [hook] = await receiver.waitForRequests(1, about(d.id, 'domain.failed'), 30_000);
    expect(JSON.parse(hook!.raw.toString('utf8')).data).to.deep.include({ domain_id: d.id, domain: 'dkim-gone.test' });
    const mails = await waitFor('the admin email of domain.failed', async () => {
      const rows = await adminEmails(ev!.id);
      return rows.length > 0 ? rows : null;
    });
    expect(mails).to.have.length(1);
    expect(mails[0]!.subject).to.contain('dkim-gone.test');

    // Still failing: a failed domain stays failed and nothing fires again.
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ checked: 1, failed: 0, suspect: 0 });
    expect((await row(d.id)).status).to.equal('failed');
    expect(await events(d.id, 'domain.failed')).to.have.length(1);
    expect(receiver.received.filter(about(d.id, 'domain.failed'))).to.have.length(1);

    // Recovery: the record is back, the next re-check verifies the domain at once.
    dns.txt(dkim.name, [dkim.value]);
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ checked: 1, verified: 1 });
    const back = await row(d.id);
    expect(back.status).to.equal('verified');
    expect(back.verified_at).to.be.instanceOf(Date);
    expect(await events(d.id, 'domain.verified')).to.have.length(2); // the manual Verify, then the recovery
    await receiver.waitForRequests(2, about(d.id, 'domain.verified'), 30_000);
  });

  it('a failure cleared by the next re-check changes nothing and fires nothing', async () => {
    const d = await verifiedDomain('dkim-blip.test');
    const dkim = d.records.find((r) => r.record === 'DKIM')!;
    dns.txt(dkim.name, ['v=DKIM1; k=rsa; p=AAAA']);
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ suspect: 1 });
    dns.txt(dkim.name, [dkim.value]);
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ checked: 1, suspect: 0, failed: 0 });
    const r = await row(d.id);
    expect(r).to.deep.include({ status: 'verified', recheck_failures: 0 });
    expect(await events(d.id, 'domain.failed')).to.have.length(0);
  });

  it('a lookup that does not answer changes nothing: verified, same verified_at, records and last check', async () => {
    const d = await verifiedDomain('dns-silent.test');
    // Verified three days ago: a reset would restart the warm-up ramp.
    await api.deps.sql`update domains set verified_at = now() - interval '3 days' where id = ${d.id}`;
    const before = await row(d.id);
    const dkim = d.records.find((r) => r.record === 'DKIM')!;
    dns.silence(dkim.name);

    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ checked: 1, inconclusive: 1, suspect: 0 });
    const after = await row(d.id);
    expect(after.status).to.equal('verified');
    expect(after.verified_at).to.deep.equal(before.verified_at);
    expect(after.last_checked_at).to.deep.equal(before.last_checked_at);
    expect(after.records).to.deep.equal(before.records);
    expect(after.recheck_failures).to.equal(0);
    expect(after.due_in).to.be.within(6 * 3600 - 120, 6 * 3600 + 1);
    expect(await events(d.id, 'domain.failed')).to.have.length(0);
  });

  it('an unanswered confirming re-check keeps the first failure pending, the domain verified', async () => {
    const d = await verifiedDomain('dns-flaky.test');
    const spf = d.records.find((r) => r.record === 'SPF')!;
    const reply = d.records.find((r) => r.record === 'MX_REPLY')!;
    dns.remove(reply.name);
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ suspect: 1 });
    dns.mx(reply.name, [{ exchange: reply.value, priority: reply.priority! }]);
    dns.silence(spf.name);
    await onlyDue([d.id]);
    expect(await recheckDueDomains(deps)).to.deep.include({ inconclusive: 1, failed: 0 });
    const r = await row(d.id);
    expect(r).to.deep.include({ status: 'verified', recheck_failures: 1 });
    expect(r.due_in).to.be.within(RECHECK_CONFIRM_SECONDS - 120, RECHECK_CONFIRM_SECONDS + 1);
    expect(await events(d.id, 'domain.failed')).to.have.length(0);
  });

  it('a manual Verify during a re-check wins: the re-check writes nothing', async () => {
    const d = await verifiedDomain('dns-manual.test');
    await onlyDue([d.id]);
    const [claimed] = await claimDueDomains(api.deps.sql, 10, RECHECK_LEASE_SECONDS);
    expect(claimed!.id).to.equal(d.id);
    const dkim = d.records.find((r) => r.record === 'DKIM')!;
    dns.remove(dkim.name);
    const manual = await api.request('POST', `/domains/${d.id}/verify`, { token: org.key.token });
    expect(manual.json.status).to.equal('failed');
    const lastCheck = (await row(d.id)).last_checked_at;
    const result = await recheckDomain(deps, { ...claimed!, status: 'verified', recheck_failures: 1 });
    expect(result.written).to.equal(false);
    const r = await row(d.id);
    expect(r.last_checked_at).to.deep.equal(lastCheck);
    // The manual check took the domain off the schedule; the next sweep puts it back on.
    expect(r.due_in).to.equal(null);
    expect(await events(d.id, 'domain.failed')).to.have.length(1); // the manual Verify's
  });

  it('two sweeps running at once check each domain once', async () => {
    const names = Array.from({ length: 16 }, (_, i) => `parallel-${i}.test`);
    const domains = [];
    for (const name of names) domains.push(await verifiedDomain(name));
    const replyNames = domains.map((d) => d.records.find((r) => r.record === 'MX_REPLY')!.name);
    const asked = replyNames.map((n) => dns.asked(n));
    const other = workerDepsFor(api, { DNS_SERVERS: dns.server, MX_HOST });
    try {
      await onlyDue(domains.map((d) => d.id));
      const opts = { pageSize: 3, concurrency: 2 };
      const [a, b] = await Promise.all([recheckDueDomains(deps, opts), recheckDueDomains(other, opts)]);
      expect(a.checked + b.checked).to.equal(domains.length);
      expect(a.errors + b.errors).to.equal(0);
      expect(replyNames.map((n, i) => dns.asked(n) - asked[i]!)).to.deep.equal(replyNames.map(() => 1));
      const rows = await Promise.all(domains.map((d) => row(d.id)));
      for (const r of rows) expect(r.due_in).to.be.within(6 * 3600 - 120, 6 * 3600 + 1);
      // Nothing is due any more: a third sweep finds nothing.
      expect((await recheckDueDomains(other, opts)).checked).to.equal(0);
    } finally {
      await other.close();
    }
  });

  it('the worker timer schedules and re-checks; DOMAIN_RECHECK_HOURS=0 turns it off', async () => {
    const d = await verifiedDomain('timer.test');
    // Not scheduled after the manual Verify: the sweep puts it at a random point of the interval.
    expect((await row(d.id)).due_in).to.equal(null);
    await onlyDue([]);
    await api.deps.sql`update domains set next_check_at = null where id = ${d.id}`;
    const off = { ...deps, config: { ...deps.config, domainRecheckHours: 0 } };
    expect((await recheckDueDomains(off)).checked).to.equal(0);
    expect((await row(d.id)).due_in).to.equal(null);
    // Scheduled within the interval (tiny here), then re-checked by the timer.
    const fast = { ...deps, config: { ...deps.config, domainRecheckHours: 1 / 3600 } };
    const before = (await row(d.id)).last_checked_at!;
    const stop = startDomainRechecks(fast, { everyMs: 50 });
    try {
      await waitFor('the timer re-check', async () => {
        const r = await row(d.id);
        return r.last_checked_at! > before ? r : null;
      });
    } finally {
      stop();
    }
    expect((await row(d.id)).status).to.equal('verified');
  });
});
