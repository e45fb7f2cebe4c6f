// Automations that branch (DESIGN §16, issue 17 item 4), through the real API, the automation
// worker and the webhook delivery worker: every step type, conditions taking both paths
// (contact properties, segment membership, the last event), wait_for_event with the event and
// with its timeout, a signed webhook call, contacts leaving on unsubscribe and on a suppression
// rule, the run inspector, durability of waiting runs (a restarted worker, a lost job), and the
// graph errors the API answers with.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { QUEUE_NAMES } from '../../shared/queues.js';
import { verify } from '../../shared/webhooks/signing.js';
import { startAutomationWorker, sweepRuns } from '../../workers/automation.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('automations that branch', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let wdeps: WorkerDeps;
  let worker: Worker;
  let hooks: Worker;
  let receiver: Receiver;
  let admin: string;
  let n = 0;

  const req = (method: string, path: string, body?: unknown) =>
    api.request(method, path, { token: admin, ...(body === undefined ? {} : { body }) });
  const create = async (steps: unknown[], event = `ev.${++n}`): Promise<{ id: string; event: string }> => {
    const res = await req('POST', '/automations', { name: `auto ${n}`, trigger: { event }, steps });
    expect(res.status, res.text).to.equal(201);
    return { id: res.json.id as string, event };
  };
  const fire = async (event: string, email: string, properties?: Json) => {
    const res = await req('POST', '/events', { name: event, email, ...(properties ? { properties } : {}) });
    expect(res.status, res.text).to.equal(202);
    return res.json.id as string;
  };
  const runOf = async (automationId: string, email: string): Promise<Json | null> => {
    const [row] = await api.deps.sql`
      select r.* from automation_runs r join contacts c on c.id = r.contact_id
      where r.automation_id = ${automationId} and c.email = ${email}`;
    return row ?? null;
  };
  const ended = (automationId: string, email: string) =>
    waitFor(`the run of ${email} to end`, async () => {
      const r = await runOf(automationId, email);
      return r && r.status !== 'active' ? r : null;
    });
  const inspect = async (automationId: string, runId: string): Promise<Json> => {
    const res = await req('GET', `/automations/${automationId}/runs/${runId}`);
    expect(res.status, res.text).to.equal(200);
    return res.json;
  };
  const contact = async (email: string): Promise<Json> => (await req('GET', `/contacts/${email}`)).json;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    const tpl = await req('POST', '/templates', {
      name: 'Nudge',
      slug: 'nudge',
      subject: 'Hi {{first_name}}',
      html: '<p>Hi {{first_name}}</p>',
      variables: [{ key: 'first_name', type: 'string', fallback_value: 'there' }],
    });
    expect(tpl.status, tpl.text).to.equal(201);
    expect((await req('POST', '/templates/nudge/publish', {})).status).to.equal(200);
    receiver = await startReceiver();
    wdeps = workerDepsFor(api);
    worker = startAutomationWorker(wdeps, { scanEveryMs: 100 });
    hooks = startWebhookDelivery(wdeps);
  });
  after(async () => {
    await worker.close();
    await hooks.close();
    await wdeps.close();
    await receiver.close();
    await api.close();
  });

  describe('the step graph', () => {
    it('refuses bad graphs with an error that names the step', async () => {
      const wait = { wait: '1h' };
      const cases: [unknown[], string][] = [
        [[{ jump: 'x' }], 'body.steps.0.jump is not a known field'],
        [[{}], 'body.steps[0] has no step type'],
        [[{ wait: '1h', add_to_segment: 'seg_x' }], 'body.steps[0] has several step types (wait, add_to_segment)'],
        [[{ wait: '1h', next: 'nowhere' }], 'body.steps[0].next names step "nowhere", which does not exist'],
        [
          [
            { condition: { field: 'email', op: 'ends_with', value: '@x.test' }, then: 'a', else: 'gone' },
            { id: 'a', ...wait },
          ],
          'body.steps[0].else names step "gone"',
        ],
        [
          [
            { id: 'a', ...wait },
            { id: 'a', ...wait },
          ],
          'body.steps[1].id "a" is already the id of body.steps[0]',
        ],
        [[{ id: 'end', ...wait }], 'reserved'],
        [
          [
            { id: 'a', ...wait },
            { id: 'b', wait: '1h', next: 'a' },
          ],
          'body.steps: steps[0] → steps[1] → steps[0] is a loop; loops are not allowed',
        ],
        [
          [
            { wait: '1h', next: 'end' },
            { id: 'lost', ...wait },
          ],
          'body.steps[1] (id "lost") can never be reached',
        ],
        [[{ wait_for_event: { event: 'paid', timeout: '1d' } }], 'body.steps[0].on_timeout is required'],
        [[{ wait_for_event: { event: 'paid', timeout: 'later' }, on_timeout: 'end' }], 'wait_for_event.timeout'],
        [[{ condition: { field: 'email', op: 'eq', value: 'a@b.c' }, next: 'end' }], 'not next'],
        [[{ wait: '1h', then: 'end' }], 'only a condition step takes then / else'],
        [[{ condition: { field: 'unsubscribed', op: 'contains', value: 'x' } }], 'body.steps[0].condition.op'],
        [[{ condition: { last_event: { within: 'ages' } } }], 'body.steps[0].condition.last_event.within'],
        [
          [{ condition: { email_event: { type: 'email.seen' } } }],
          'body.steps.0.condition.email_event.type must be one of',
        ],
        [[{ add_to_segment: 'seg_01J00000000000000000000000' }], 'segment seg_01J00000000000000000000000'],
        [[{ webhook: { webhook_id: 'wh_nope' } }], 'webhook wh_nope'],
        [
          [{ condition: { not: { topic: 'top_01J00000000000000000000000', subscribed: true } } }],
          'body.steps[0].condition.not.topic: "top_01J00000000000000000000000" is not a topic of this organization',
        ],
      ];
      for (const [steps, message] of cases) {
        const res = await req('POST', '/automations', { name: 'bad', trigger: { event: 'x' }, steps });
        expectError(res, 422, 'validation_error', JSON.stringify(steps));
        expect(res.json.error.message, JSON.stringify(steps)).to.contain(message);
      }
      // PATCH checks the graph too.
      const { id } = await create([wait]);
      const res = await req('PATCH', `/automations/${id}`, { steps: [{ wait: '1h', next: 'x' }] });
      expectError(res, 422, 'validation_error');
      expect(res.json.error.message).to.contain('body.steps[0].next');
    });

    it('accepts a graph whose paths join again, and shows it back as given', async () => {
      const steps = [
        { condition: { field: 'properties.plan', op: 'eq', value: 'pro' }, then: 'pro', else: 'free' },
        { id: 'free', update_contact: { properties: { tier: 'free' } }, next: 'both' },
        { id: 'pro', update_contact: { properties: { tier: 'pro' } } },
        { id: 'both', wait: '1s' },
      ];
      const { id } = await create(steps);
      expect((await req('GET', `/automations/${id}`)).json.steps).to.deep.equal(steps);
    });
  });

  describe('steps', () => {
    it('condition on contact properties takes each path; update_contact writes the contact', async () => {
      const { id, event } = await create([
        { condition: { field: 'properties.plan', op: 'eq', value: 'pro' }, then: 'pro', else: 'free' },
        { id: 'pro', update_contact: { first_name: 'Pro', properties: { path: 'pro' } }, next: 'end' },
        { id: 'free', update_contact: { properties: { path: 'free', plan: null } } },
      ]);
      await req('POST', '/contacts', { email: 'p1@example.com', properties: { plan: 'pro' } });
      await req('POST', '/contacts', { email: 'f1@example.com', properties: { plan: 'basic' } });
      await fire(event, 'p1@example.com');
      await fire(event, 'f1@example.com');
      const pro = await ended(id, 'p1@example.com');
      const free = await ended(id, 'f1@example.com');
      expect(pro.status).to.equal('completed');
      expect(free.status).to.equal('completed');
      const p = await contact('p1@example.com');
      expect(p.first_name).to.equal('Pro');
      expect(p.properties).to.deep.equal({ plan: 'pro', path: 'pro' });
      expect((await contact('f1@example.com')).properties).to.deep.equal({ path: 'free' });

      const hp = (await inspect(id, pro.id)).history;
      expect(hp.map((h: Json) => [h.type, h.outcome, h.next_step])).to.deep.equal([
        ['condition', 'true', 1],
        ['update_contact', 'updated', null],
      ]);
      const hf = (await inspect(id, free.id)).history;
      expect(hf.map((h: Json) => [h.type, h.outcome, h.step_id])).to.deep.equal([
        ['condition', 'false', null],
        ['update_contact', 'updated', 'free'],
      ]);
    });

    it('add_to_segment / remove_from_segment change membership, and a condition reads it', async () => {
      // A filter that selects no one: membership comes only from the steps.
      const seg = await req('POST', '/segments', {
        name: 'VIP',
        filter: { field: 'email', op: 'ends_with', value: '@nobody.test' },
      });
      expect(seg.status, seg.text).to.equal(201);
      const segId = seg.json.id as string;
      const members = async () =>
        (await req('GET', `/segments/${segId}/contacts?limit=100`)).json.data.map((c: Json) => c.email);

      const add = await create([{ add_to_segment: segId }]);
      await fire(add.event, 'vip@example.com');
      await ended(add.id, 'vip@example.com');
      expect(await members()).to.deep.equal(['vip@example.com']);

      const flow = await create([
        { id: 'check', condition: { in_segment: segId }, then: 'member', else: 'outsider' },
        { id: 'member', update_contact: { properties: { vip: true } } },
        { remove_from_segment: segId },
        { condition: { not: { in_segment: segId } }, then: 'end', else: 'outsider' },
        { id: 'outsider', update_contact: { properties: { vip: false } } },
      ]);
      await fire(flow.event, 'vip@example.com');
      await fire(flow.event, 'plain@example.com');
      const vip = await ended(flow.id, 'vip@example.com');
      const plain = await ended(flow.id, 'plain@example.com');
      expect((await inspect(flow.id, vip.id)).history.map((h: Json) => h.outcome)).to.deep.equal([
        'true',
        'updated',
        'removed',
        'true',
      ]);
      expect((await inspect(flow.id, plain.id)).history.map((h: Json) => h.outcome)).to.deep.equal([
        'false',
        'updated',
      ]);
      expect((await contact('vip@example.com')).properties).to.deep.equal({ vip: true });
      expect((await contact('plain@example.com')).properties).to.deep.equal({ vip: false });
      expect(await members()).to.deep.equal([]);

      // Removal wins over the filter, and an add of a filtered-in contact changes nothing.
      const seg2 = await req('POST', '/segments', {
        name: 'Example',
        filter: { field: 'email', op: 'ends_with', value: '@example.com' },
      });
      const out = await create([{ remove_from_segment: seg2.json.id }]);
      await fire(out.event, 'vip@example.com');
      await ended(out.id, 'vip@example.com');
      const left = (await req('GET', `/segments/${seg2.json.id}/contacts?limit=100`)).json.data.map(
        (c: Json) => c.email,
      );
      expect(left).to.include('plain@example.com').and.not.include('vip@example.com');
    });

    it('a condition on the last event: name, age and properties', async () => {
      const { id, event } = await create([
        {
          condition: { last_event: { name: 'purchase', within: '1d', properties: { sku: 'A' } } },
          then: 'buyer',
          else: 'end',
        },
        { id: 'buyer', update_contact: { properties: { buyer: true } } },
      ]);
      await fire('purchase', 'b1@example.com', { sku: 'B' });
      await fire('purchase', 'b1@example.com', { sku: 'A', price: 3 });
      await fire('purchase', 'b2@example.com', { sku: 'A' });
      await fire('purchase', 'b2@example.com', { sku: 'B' }); // the last purchase is not of A
      await req('POST', '/contacts', { email: 'b3@example.com' });
      for (const e of ['b1', 'b2', 'b3']) await fire(event, `${e}@example.com`);
      const outcome = async (email: string) =>
        (await inspect(id, (await ended(id, email)).id)).history[0].outcome as string;
      expect(await outcome('b1@example.com')).to.equal('true');
      expect(await outcome('b2@example.com')).to.equal('false');
      expect(await outcome('b3@example.com')).to.equal('false');
      expect((await contact('b1@example.com')).properties).to.deep.equal({ buyer: true });
    });

    it('a condition on the events of the messages the run sent (opened by a person or not)', async () => {
      const { id, event } = await create([
        { send: { template: 'nudge', from: 'hello@acme.test' } },
        { wait_for_event: { event: 'gate', timeout: '1h' }, next: 'check', on_timeout: 'check' },
        { id: 'check', condition: { email_event: { type: 'email.opened', last: true } }, then: 'opened', else: 'end' },
        { id: 'opened', update_contact: { properties: { opened: true } } },
      ]);
      await fire(event, 'o1@example.com');
      await fire(event, 'o2@example.com');
      const [r1, r2] = await waitFor('both runs at the gate', async () => {
        const a = await runOf(id, 'o1@example.com');
        const b = await runOf(id, 'o2@example.com');
        return a?.waiting_for === 'gate' && b?.waiting_for === 'gate' && [a, b];
      });
      // o1 opened the message the run sent (as the tracking pixel records it).
      await api.deps.sql`
        insert into events (id, org_id, mode, type, email_id, dedupe_key)
        values (${`evt_${Date.now()}`}, ${org.organization.id}, 'live', 'email.opened', ${r1!.email_ids[0]},
                ${`${r1!.email_ids[0]}:opened:test`})`;
      // o2's message was only fetched by Apple's proxy: a machine's open, which conditions ignore.
      await api.deps.sql`
        insert into events (id, org_id, mode, type, email_id, dedupe_key, data)
        values (${`evt_${Date.now()}m`}, ${org.organization.id}, 'live', 'email.opened', ${r2!.email_ids[0]},
                ${`${r2!.email_ids[0]}:opened:machine:test`}, '{"machine": true, "machine_reason": "apple_mpp"}')`;
      await fire('gate', 'o1@example.com');
      await fire('gate', 'o2@example.com');
      const outcome = async (email: string) =>
        (await inspect(id, (await ended(id, email)).id)).history.map((h: Json) => h.outcome);
      expect(await outcome('o1@example.com')).to.deep.equal(['sent', 'event_received', 'true', 'updated']);
      expect(await outcome('o2@example.com')).to.deep.equal(['sent', 'event_received', 'false']);
      expect((await contact('o1@example.com')).properties).to.deep.equal({ opened: true });
    });

    it('wait_for_event goes on when the event comes, and takes on_timeout when it does not', async () => {
      const steps = (timeout: string) => [
        { wait_for_event: { event: 'paid', timeout }, next: 'thanks', on_timeout: 'nudge' },
        { id: 'thanks', update_contact: { properties: { outcome: 'paid' } }, next: 'end' },
        { id: 'nudge', send: { template: 'nudge', from: 'Acme <hello@acme.test>' } },
      ];
      const long = await create(steps('1h'));
      const short = await create(steps('2s'));
      // An event before the step began does not count.
      await fire('paid', 'w1@example.com');
      await fire(long.event, 'w1@example.com');
      await fire(short.event, 'w2@example.com');
      await waitFor('the run to wait', async () => {
        const a = await runOf(long.id, 'w1@example.com');
        return a?.waiting_for === 'paid';
      });
      const listed = await req('GET', `/automations/${long.id}/runs?status=active`);
      expect(listed.json.data).to.have.length(1);
      expect(listed.json.data[0]).to.deep.include({ step: 0, step_type: 'wait_for_event', waiting_for: 'paid' });
      const paidEvent = await fire('paid', 'w1@example.com', { amount: 10 });

      const paid = await ended(long.id, 'w1@example.com');
      const timedOut = await ended(short.id, 'w2@example.com');
      expect((await contact('w1@example.com')).properties).to.deep.equal({ outcome: 'paid' });
      expect(paid.email_ids).to.deep.equal([]);
      const h1 = (await inspect(long.id, paid.id)).history;
      expect(h1[0]).to.deep.include({ type: 'wait_for_event', outcome: 'event_received', next_step: 1 });
      expect(h1[0].detail).to.deep.equal({ event_id: paidEvent });

      expect(timedOut.status).to.equal('completed');
      expect(timedOut.email_ids).to.have.length(1);
      const detail = await inspect(short.id, timedOut.id);
      expect(detail.history.map((h: Json) => [h.outcome, h.next_step])).to.deep.equal([
        ['timed_out', 2],
        ['sent', null],
      ]);
      const waited = Date.parse(detail.history[0].finished_at) - Date.parse(detail.history[0].started_at);
      expect(waited).to.be.at.least(1900);
      expect(detail.history[1].detail).to.deep.equal({ email_id: timedOut.email_ids[0] });
      const [email] = await api.deps.sql`select subject, source from emails where id = ${timedOut.email_ids[0]}`;
      expect(email).to.deep.equal({ subject: 'Hi there', source: 'automation' });
    });

    it('webhook: a call to the organization’s endpoint, signed with its secret', async () => {
      const wh = await req('POST', '/webhooks', { url: `${receiver.url}/auto`, events: ['email.sent'] });
      expect(wh.status, wh.text).to.equal(201);
      const { id, event } = await create([
        { id: 'call', webhook: { webhook_id: wh.json.id, payload: { campaign: 'spring' } } },
      ]);
      await req('POST', '/contacts', { email: 'hook@example.com', first_name: 'Hook' });
      const occurrence = await fire(event, 'hook@example.com', { plan: 'pro' });
      const run = await ended(id, 'hook@example.com');
      const [got] = await receiver.waitForRequests(1, (r) => r.path === '/auto');
      expect(verify(got!.raw, got!.headers['tern-signature'] as string, wh.json.signing_secret)).to.equal(true);
      expect(got!.headers['tern-event-type']).to.equal('automation.webhook');
      const body = JSON.parse(got!.raw.toString('utf8'));
      expect(body.type).to.equal('automation.webhook');
      expect(body.data).to.deep.include({
        automation_id: id,
        run_id: run.id,
        step: 0,
        step_id: 'call',
        trigger: occurrence,
        payload: { campaign: 'spring' },
        context: { plan: 'pro' },
      });
      expect(body.data.contact).to.deep.include({ email: 'hook@example.com', first_name: 'Hook' });
      const h = (await inspect(id, run.id)).history[0];
      expect(h).to.deep.include({ type: 'webhook', outcome: 'queued' });
      expect(h.detail.delivery_id).to.equal(got!.headers['tern-delivery-id']);
      // The call shows among the endpoint's deliveries.
      const deliveries = await req('GET', `/webhooks/${wh.json.id}/deliveries`);
      expect(deliveries.json.data.map((d: Json) => d.id)).to.include(h.detail.delivery_id);
    });
  });

  describe('leaving a run', () => {
    // The runs wait an hour; once the contact changed, the test makes the wait due and sweeps.
    const dueNow = async (automationId: string) => {
      await api.deps.sql`update automation_runs set next_at = now() where automation_id = ${automationId}`;
      expect(await sweepRuns(wdeps, 0)).to.be.at.least(1);
    };

    it('a contact who unsubscribes leaves at the next step, and gets no message', async () => {
      const { id, event } = await create([{ wait: '1h' }, { send: { template: 'nudge', from: 'hello@acme.test' } }]);
      await req('POST', '/contacts', { email: 'leaver@example.com' });
      await fire(event, 'leaver@example.com');
      await waitFor('the run to wait', async () => (await runOf(id, 'leaver@example.com'))?.step_started_at);
      const patched = await req('PATCH', '/contacts/leaver@example.com', { unsubscribed: true });
      expect(patched.status, patched.text).to.equal(200);
      await dueNow(id);
      const run = await ended(id, 'leaver@example.com');
      expect(run).to.deep.include({ status: 'exited', exit_reason: 'unsubscribed' });
      expect(run.email_ids).to.deep.equal([]);
      const listed = await req('GET', `/automations/${id}/runs?status=exited`);
      expect(listed.json.data[0]).to.deep.include({ id: run.id, status: 'exited', exit_reason: 'unsubscribed' });
    });

    it('a contact whose address a suppression rule matches leaves (the delivery path’s check)', async () => {
      const { id, event } = await create([{ wait: '1h' }, { send: { template: 'nudge', from: 'hello@acme.test' } }]);
      await fire(event, 'ann@blocked.test');
      await fire(event, 'ok@example.com');
      await waitFor('the runs to wait', async () => {
        const a = await runOf(id, 'ann@blocked.test');
        const b = await runOf(id, 'ok@example.com');
        return a?.step_started_at && b?.step_started_at;
      });
      const rule = await req('POST', '/suppressions', { pattern: '*@blocked.test' });
      expect(rule.status, rule.text).to.be.oneOf([200, 201]);
      await dueNow(id);
      const run = await ended(id, 'ann@blocked.test');
      expect(run).to.deep.include({ status: 'exited', exit_reason: 'suppressed: manual' });
      expect(run.email_ids).to.deep.equal([]);
      const ok = await ended(id, 'ok@example.com');
      expect(ok.status).to.equal('completed');
      expect(ok.email_ids).to.have.length(1);
    });
  });

  describe('the run inspector', () => {
    it('lists runs by status with cursor paging; shows a run’s steps; 404 for another run', async () => {
      const { id, event } = await create([
        { condition: { field: 'first_name', op: 'eq', value: 'Stop' }, then: 'end', else: 'hold' },
        { id: 'hold', wait: '1h' },
      ]);
      await req('POST', '/contacts', { email: 'i1@example.com', first_name: 'Stop' });
      for (const e of ['i1', 'i2', 'i3']) await fire(event, `${e}@example.com`);
      await ended(id, 'i1@example.com');
      await waitFor('two runs holding', async () => {
        const res = await req('GET', `/automations/${id}/runs?status=active`);
        return res.json.data.length === 2 && res.json.data.every((r: Json) => r.step_started_at !== null);
      });
      const page1 = await req('GET', `/automations/${id}/runs?status=active&limit=1`);
      expect(page1.json.has_more).to.equal(true);
      const page2 = await req('GET', `/automations/${id}/runs?status=active&limit=1&after=${page1.json.data[0].id}`);
      expect(page2.json.has_more).to.equal(false);
      expect(page2.json.data[0].id).to.not.equal(page1.json.data[0].id);
      const completed = await req('GET', `/automations/${id}/runs?status=completed`);
      expect(completed.json.data).to.have.length(1);
      expectError(await req('GET', `/automations/${id}/runs?status=sideways`), 422, 'validation_error');

      const one = await inspect(id, page1.json.data[0].id);
      expect(one).to.deep.include({
        object: 'automation_run',
        status: 'active',
        step: 1,
        step_id: 'hold',
        step_type: 'wait',
      });
      expect(Date.parse(one.next_at) - Date.parse(one.step_started_at)).to.equal(3_600_000);
      expect(one.steps).to.have.length(2);
      expect(one.history).to.have.length(1);
      expect(one.history[0]).to.deep.include({ step: 0, type: 'condition', outcome: 'false', next_step: 1 });
      expect(Date.parse(one.history[0].finished_at)).to.be.at.least(Date.parse(one.history[0].started_at));

      const other = await create([{ wait: '1h' }]);
      expectError(await req('GET', `/automations/${other.id}/runs/${one.id}`), 404, 'not_found');
      expectError(await req('GET', `/automations/${id}/runs/run_nope`), 404, 'not_found');
    });
  });

  describe('durability', () => {
    it('a waiting run completes after its worker restarts, and after Redis lost its job (the sweep)', async () => {
      const { id, event } = await create([{ wait: '1h' }, { update_contact: { properties: { done: true } } }]);
      await fire(event, 'd1@example.com');
      await fire(event, 'd2@example.com');
      const [d1, d2] = await waitFor('both runs to wait', async () => {
        const a = await runOf(id, 'd1@example.com');
        const b = await runOf(id, 'd2@example.com');
        return a?.step_started_at && b?.step_started_at && [a, b];
      });
      await worker.close();
      // While no worker runs, both waits come due (as an hour passing would make them).
      await api.deps.sql`update automation_runs set next_at = now() where automation_id = ${id}`;
      const queue = api.deps.queues[QUEUE_NAMES.automation];
      // d1's delayed job is still in Redis; Redis loses d2's.
      await (await queue.getJob(`${d1!.id}-0-due`))!.changeDelay(0);
      await (await queue.getJob(`${d2!.id}-0-due`))!.remove();
      // (its own sweep far off: the test sweeps by hand)
      worker = startAutomationWorker(wdeps, { scanEveryMs: 100, sweepEveryScans: 100_000 });
      expect((await ended(id, 'd1@example.com')).status).to.equal('completed');
      const stuck = await runOf(id, 'd2@example.com');
      expect(stuck).to.include({ status: 'active', step: 0 });
      expect(await sweepRuns(wdeps, 0)).to.be.at.least(1);
      expect((await ended(id, 'd2@example.com')).status).to.equal('completed');
      expect((await contact('d2@example.com')).properties).to.deep.equal({ done: true });
    });
  });
});
