// Automations (DESIGN §5 "Events and automations"): CRUD (ADMIN, live), runs started by POST
// /events and by contact creation (not by a domain-restricted key's signup), a wait step, a send
// step rendering the template with the contact's fields, one run per occurrence, and disabled
// automations stopping pending runs and starting none.
import { expect } from 'chai';
import { scanTriggers, startAutomationWorker } from '../../workers/automation.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';
import type { Worker } from 'bullmq';
import { waitFor } from '../helpers/wait.js';

describe('automations', () => {
  let api: TestApi;
  let org: SeededOrg;
  let wdeps: WorkerDeps;
  let worker: Worker;
  let admin: string;
  let send: string;
  let rSend: string;

  const req = (method: string, path: string, token: string, body?: unknown) =>
    api.request(method, path, { token, ...(body === undefined ? {} : { body }) });
  const runsOf = (automationId: string) =>
    api.deps.sql`select r.*, c.email from automation_runs r join contacts c on c.id = r.contact_id
                 where automation_id = ${automationId} order by r.id`;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    send = (await org.mint({ permission: 'SEND' })).token;
    rSend = (await org.mint({ permission: 'SEND', domains: ['acme.test'] })).token;
    const tpl = await req('POST', '/templates', admin, {
      name: 'Welcome',
      slug: 'welcome',
      subject: 'Welcome {{first_name}}',
      html: '<p>Hi {{first_name}}, plan {{plan}}</p>',
      variables: [
        { key: 'first_name', type: 'string', fallback_value: 'there' },
        { key: 'plan', type: 'string', fallback_value: 'free' },
      ],
    });
    expect(tpl.status, tpl.text).to.equal(201);
    expect((await req('POST', '/templates/welcome/publish', admin, {})).status).to.equal(200);
    wdeps = workerDepsFor(api);
    worker = startAutomationWorker(wdeps, { scanEveryMs: 100 });
  });
  after(async () => {
    await worker.close();
    await wdeps.close();
    await api.close();
  });

  describe('CRUD', () => {
    it('creates, reads, lists, updates and deletes; checks steps', async () => {
      const body = {
        name: 'Onboarding',
        trigger: { event: 'crud.test' },
        steps: [{ wait: '2h' }, { send: { template: 'welcome', from: 'Acme <hello@acme.test>' } }],
      };
      const created = await req('POST', '/automations', admin, body);
      expect(created.status, created.text).to.equal(201);
      expect(created.json).to.deep.include({ object: 'automation', name: 'Onboarding', status: 'enabled' });
      expect(created.json.trigger).to.deep.equal({ event: 'crud.test' });
      expect(created.json.steps).to.deep.equal(body.steps);
      expect(created.json.id).to.match(/^aut_/);
      const id = created.json.id as string;

      expect((await req('GET', `/automations/${id}`, admin)).json.name).to.equal('Onboarding');
      const listed = await req('GET', '/automations?limit=100', admin);
      expect(listed.json.data.map((a: { id: string }) => a.id)).to.include(id);
      const patched = await req('PATCH', `/automations/${id}`, admin, {
        status: 'disabled',
        trigger: { contact_created: true },
      });
      expect(patched.json).to.deep.include({ status: 'disabled' });
      expect(patched.json.trigger).to.deep.equal({ contact_created: true });
      expect((await req('DELETE', `/automations/${id}`, admin)).json).to.deep.equal({
        object: 'automation',
        id,
        deleted: true,
      });
      expectError(await req('GET', `/automations/${id}`, admin), 404, 'not_found');

      const bad: [unknown, string][] = [
        [{ ...body, steps: [{ wait: 'soon' }] }, 'body.steps[0].wait'],
        [{ ...body, steps: [{ send: { template: 'nope', from: 'a@acme.test' } }] }, 'body.steps[0].send.template'],
        [{ ...body, steps: [{ send: { template: 'welcome', from: 'a@other.test' } }] }, 'body.steps[0].send.from'],
        [{ ...body, trigger: { nothing: 1 } }, 'body.trigger'],
        [{ ...body, steps: [] }, 'body.steps'],
      ];
      for (const [b, field] of bad) {
        const res = await req('POST', '/automations', admin, b);
        expect(res.status, JSON.stringify(b)).to.equal(422);
        expect(res.json.error.message).to.contain(field);
      }
      expect((await req('POST', '/automations', send, body)).json.error.code).to.equal('forbidden');
    });
  });

  describe('runs', () => {
    let onEvent: string;
    let onCreate: string;

    before(async () => {
      const a = await req('POST', '/automations', admin, {
        name: 'Signed up',
        trigger: { event: 'signed_up' },
        steps: [{ wait: '1s' }, { send: { template: 'welcome', from: 'Acme <hello@acme.test>', kind: 'onboarding' } }],
      });
      onEvent = a.json.id;
      const b = await req('POST', '/automations', admin, {
        name: 'New contact',
        trigger: { contact_created: true },
        steps: [{ send: { template: 'welcome', from: 'hello@acme.test', subject: 'Hello there' } }],
      });
      onCreate = b.json.id;
    });

    it('runs an event-triggered automation: wait, then send rendered with contact and event values', async function () {
      this.timeout(30_000);
      await req('POST', '/contacts', send, { email: 'ann@example.com', first_name: 'Ann' });
      const ev = await req('POST', '/events', send, {
        name: 'signed_up',
        email: 'ann@example.com',
        properties: { plan: 'pro' },
      });
      expect(ev.status).to.equal(202);
      const run = await waitFor('the run to complete', async () => {
        const rows = await runsOf(onEvent);
        return rows.length === 1 && rows[0]!.status === 'completed' && rows[0]!;
      });
      expect(run.occurrence).to.equal(ev.json.id);
      expect(run.email_ids).to.have.length(1);
      const [email] = await api.deps.sql`select * from emails where id = ${run.email_ids[0]}`;
      expect(email).to.include({
        source: 'automation',
        kind: 'onboarding',
        subject: 'Welcome Ann',
        html: '<p>Hi Ann, plan pro</p>',
        mode: 'live',
        status: 'queued',
      });
      expect(email!.to_addresses).to.deep.equal(['ann@example.com']);
      // The wait step held the send for at least its second.
      expect(new Date(email!.created_at).getTime() - new Date(run.created_at).getTime()).to.be.at.least(900);

      const listed = await req('GET', `/automations/${onEvent}/runs`, admin);
      expect(listed.json.data[0]).to.deep.include({ object: 'automation_run', status: 'completed', step: 2 });
    });

    it('starts one run per occurrence, even when the scan sees an event again', async function () {
      this.timeout(30_000);
      const ev = await req('POST', '/events', send, { name: 'signed_up', email: 'ann@example.com' });
      await waitFor('a second run', async () => (await runsOf(onEvent)).length === 2);
      await api.deps.sql`update contact_events set consumed_at = null where id = ${ev.json.id}`;
      await waitFor('the event to be consumed again', async () => {
        await scanTriggers(wdeps);
        const [row] = await api.deps.sql`select consumed_at from contact_events where id = ${ev.json.id}`;
        return row!.consumed_at !== null;
      });
      expect(await runsOf(onEvent)).to.have.length(2);
    });

    it('runs on contact creation, but not for a domain-restricted signup', async function () {
      this.timeout(30_000);
      const restricted = await req('POST', '/contacts', rSend, { email: 'quiet@example.com' });
      expect(restricted.status).to.equal(201);
      const open = await req('POST', '/contacts', send, { email: 'bob@example.com', first_name: 'Bob' });
      const run = await waitFor('the creation run to complete', async () => {
        const rows = await runsOf(onCreate);
        const r = rows.find((x) => x.contact_id === open.json.id);
        return r?.status === 'completed' && r;
      });
      const [email] = await api.deps.sql`select * from emails where id = ${run.email_ids[0]}`;
      expect(email).to.include({ subject: 'Hello there', kind: 'automation', source: 'automation' });
      const rows = await runsOf(onCreate);
      expect(rows.some((r) => r.contact_id === restricted.json.id)).to.equal(false);
      // An update of an existing contact is not a creation.
      await req('POST', '/contacts', send, { email: 'bob@example.com', last_name: 'B' });
      await req('POST', '/contacts', send, { email: 'carl@example.com' });
      await waitFor('carl', async () => (await runsOf(onCreate)).some((r) => r.email === 'carl@example.com'));
      expect((await runsOf(onCreate)).filter((r) => r.email === 'bob@example.com')).to.have.length(1);
    });

    it('a disabled automation stops pending runs and starts none', async function () {
      this.timeout(30_000);
      const a = await req('POST', '/automations', admin, {
        name: 'Trial',
        trigger: { event: 'trial' },
        steps: [{ wait: '3s' }, { send: { template: 'welcome', from: 'hello@acme.test' } }],
      });
      const id = a.json.id as string;
      await req('POST', '/events', send, { name: 'trial', email: 'dora@example.com' });
      await waitFor('the run to wait', async () => {
        const rows = await runsOf(id);
        return rows.length === 1 && rows[0]!.step === 0 && rows[0]!.step_started_at !== null;
      });
      await req('PATCH', `/automations/${id}`, admin, { status: 'disabled' });
      const run = await waitFor('the run to stop', async () => {
        const rows = await runsOf(id);
        return rows[0]!.status === 'stopped' && rows[0]!;
      });
      expect(run.email_ids).to.deep.equal([]);
      expect(run.step).to.equal(0);

      await req('POST', '/events', send, { name: 'trial', email: 'ed@example.com' });
      const sentinel = await req('POST', '/events', send, { name: 'signed_up', email: 'ed@example.com' });
      await waitFor('the sentinel run', async () =>
        (await runsOf(onEvent)).some((r) => r.occurrence === sentinel.json.id),
      );
      expect(await runsOf(id)).to.have.length(1);
    });
  });
});
