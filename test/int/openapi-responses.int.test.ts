// Real answers against the OpenAPI document: each call below goes through the API as a client
// would, and its status must be one the document lists for that operation and its body must
// validate (ajv, JSON Schema 2020-12) against the schema documented for that status. A field
// added to, renamed in or dropped from an answer without the document following fails here.
import { expect } from 'chai';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import * as formatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { insertRuns, recordRunStep } from '../../shared/db/automations.js';
import { recordEvents } from '../../shared/events.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const addFormats = (formatsModule as unknown as { default: FormatsPlugin }).default;

type Ref = { $ref: string };
type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, Ref | { content?: Record<string, { schema?: Ref }> }> }>
  >;
};

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

describe('OpenAPI document against real answers', () => {
  let api: TestApi;
  let org: SeededOrg;
  let doc: Doc;
  let admin: string;
  let testKey: string;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const checked = new Set<string>();

  /** Validator of the documented answer of `method path` with `status`. */
  function schemaFor(method: string, path: string, status: number): ValidateFunction {
    const responses = doc.paths[path]?.[method.toLowerCase()]?.responses;
    expect(responses, `${method} ${path} is not documented`).to.not.equal(undefined);
    const entry = responses![String(status)];
    expect(entry, `${method} ${path} answered ${status}, which the document does not list`).to.not.equal(undefined);
    const base =
      '$ref' in entry!
        ? entry.$ref.slice(1)
        : `/${pointer('paths', path, method.toLowerCase(), 'responses', String(status))}`;
    return ajv.compile({ $ref: `openapi#${base}/${pointer('content', 'application/json', 'schema')}` });
  }

  /** Calls `method path` (the document's template, filled from `params`) and checks the answer. */
  async function call(
    method: string,
    path: string,
    opts: { token?: string; body?: unknown; params?: Record<string, string>; query?: string } = {},
  ): Promise<TestResponse> {
    const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(opts.params![name]!));
    const res = await api.request(method, `${concrete}${opts.query ? `?${opts.query}` : ''}`, {
      token: opts.token ?? admin,
      ...(opts.body === undefined ? {} : { body: opts.body }),
    });
    const validate = schemaFor(method, path, res.status);
    const ok = validate(res.json);
    expect(
      ok,
      `${method} ${path} ${res.status}: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`,
    ).to.equal(true);
    checked.add(`${method} ${path} ${res.status}`);
    return res;
  }

  before(async function () {
    this.timeout(60_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    testKey = (await org.mint({ permission: 'FULL', mode: 'test' })).token;
    doc = (await api.request('GET', '/openapi.json')).json as Doc;
    ajv.addSchema(doc, 'openapi');
  });
  after(async () => await api.close());

  it('keys and the organization', async () => {
    await call('GET', '/keys/me');
    const created = await call('POST', '/keys', { body: { name: 'docs', permission: 'SEND' } });
    const id = created.json.id as string;
    await call('GET', '/keys');
    await call('GET', '/keys/{id}', { params: { id } });
    await call('POST', '/keys/{id}/rotate', { params: { id }, body: { expires_in: 0 } });
    await call('DELETE', '/keys/{id}', { params: { id } });
    await call('GET', '/keys/{id}', { params: { id: 'key_unknown' } }); // 404 as documented
    await call('GET', '/organization');
    await call('PATCH', '/organization', { body: { daily_cap: 1000 } });
    await call('POST', '/keys', { body: { name: 'x', permission: 'NOPE' } }); // 422
    await call('GET', '/domains', { token: testKey }); // 403 live-only
  });

  it('domains', async () => {
    const created = await call('POST', '/domains', { body: { name: 'docs-example.test' } });
    const id = created.json.id as string;
    await call('GET', '/domains');
    await call('GET', '/domains/{id}', { params: { id } });
    await call('PATCH', '/domains/{id}', { params: { id }, body: { open_tracking: true, click_tracking: null } });
    await call('DELETE', '/domains/{id}', { params: { id } });
  });

  it('emails', async () => {
    const message = { from: 'Acme <hello@acme.test>', to: 'ann@example.com', subject: 'Hi', html: '<p>Hi</p>' };
    const sent = await call('POST', '/emails', {
      token: testKey,
      body: { ...message, tags: [{ name: 'a', value: 'b' }] },
    });
    const id = sent.json.id as string;
    await call('POST', '/emails/batch', { token: testKey, body: [message, { ...message, to: 'bob@example.com' }] });
    await call('GET', '/emails', { token: testKey });
    await call('GET', '/emails/{id}', { token: testKey, params: { id } });
    // A threaded reply is one of the message's events, about no recipient.
    await recordEvents(api.deps.sql, [
      {
        orgId: org.organization.id,
        mode: 'test',
        type: 'email.received',
        emailId: id,
        dedupeKey: `${id}:reply`,
        data: { from: 'ann@example.com', to: ['hello@reply.acme.test'], subject: 'Re: Hi' },
      },
    ]);
    const events = await call('GET', '/emails/{id}/events', { token: testKey, params: { id } });
    expect((events.json.data as { type: string }[]).map((e) => e.type)).to.include('email.received');
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await call('POST', '/emails', { token: testKey, body: { ...message, scheduled_at: later } });
    const sid = scheduled.json.id as string;
    const laterStill = new Date(Date.now() + 7_200_000).toISOString();
    await call('PATCH', '/emails/{id}', { token: testKey, params: { id: sid }, body: { scheduled_at: laterStill } });
    await call('POST', '/emails/{id}/cancel', { token: testKey, params: { id: sid } });
    await call('POST', '/emails/{id}/cancel', { token: testKey, params: { id: sid } }); // 409 invalid_state
    await call('POST', '/emails', { token: testKey, body: { ...message, to: undefined } }); // 422
  });

  it('templates and suppressions', async () => {
    const t = await call('POST', '/templates', {
      token: testKey,
      body: { name: 'Welcome', slug: 'welcome-docs', subject: 'Hi {{{name}}}', html: '<p>{{{name}}}</p>' },
    });
    const id = t.json.id as string;
    await call('GET', '/templates', { token: testKey });
    await call('PATCH', '/templates/{id}', { token: testKey, params: { id }, body: { subject: 'Hello' } });
    await call('POST', '/templates/{id}/publish', { token: testKey, params: { id } });
    await call('GET', '/templates/{id}', { token: testKey, params: { id } });
    await call('DELETE', '/templates/{id}', { token: testKey, params: { id } });

    const s = await call('POST', '/suppressions', { body: { email: 'gone@example.com' } });
    await call('POST', '/suppressions', { body: { email: 'gone@example.com' } }); // 200: it existed
    await call('GET', '/suppressions');
    await call('GET', '/suppressions/{id}', { params: { id: s.json.id as string } });
    await call('DELETE', '/suppressions/{id}', { params: { id: 'gone@example.com' } });
  });

  it('webhooks', async () => {
    const w = await call('POST', '/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['email.sent'] } });
    const id = w.json.id as string;
    await call('GET', '/webhooks');
    await call('GET', '/webhooks/{id}', { params: { id } });
    await call('PATCH', '/webhooks/{id}', { params: { id }, body: { description: 'docs' } });
    await call('POST', '/webhooks/{id}/rotate-secret', { params: { id }, body: {} });
    await call('POST', '/webhooks/{id}/test', { params: { id }, body: { type: 'email.delivered' } });
    await call('GET', '/webhooks/{id}/deliveries', { params: { id } });
    await call('DELETE', '/webhooks/{id}', { params: { id } });
  });

  it('contacts, topics, segments, events', async () => {
    const topic = await call('POST', '/topics', { body: { name: 'News', default_subscription: 'opt_in' } });
    await call('GET', '/topics');
    const c = await call('POST', '/contacts', {
      body: { email: 'ann@example.com', first_name: 'Ann', properties: { plan: 'pro' } },
    });
    const id = c.json.id as string;
    await call('POST', '/contacts', { body: { email: 'ann@example.com', last_name: 'Smith' } }); // 200
    await call('GET', '/contacts');
    await call('GET', '/contacts/{id}', { params: { id } });
    await call('PATCH', '/contacts/{id}', { params: { id }, body: { unsubscribed: false } });
    const choice = [{ id: topic.json.id as string, subscription: 'opt_out' }];
    await call('POST', '/contacts/{id}/subscriptions', { params: { id }, body: { topics: choice } });
    await call('GET', '/contacts/{id}/subscriptions', { params: { id } });
    await call('PATCH', '/contacts/{id}/topics', { params: { id }, body: choice });
    await call('GET', '/contacts/{id}/topics', { params: { id } });
    const seg = await call('POST', '/segments', {
      body: { name: 'Pro', filter: { field: 'properties.plan', op: 'eq', value: 'pro' } },
    });
    await call('GET', '/segments');
    await call('GET', '/segments/{id}/contacts', { params: { id: seg.json.id as string } });
    await call('POST', '/events', { body: { name: 'signed_up', email: 'bob@example.com' } });
    await call('DELETE', '/contacts/{id}', { params: { id } });
  });

  it('broadcasts, automations, inbound and metrics', async () => {
    const seg = await call('POST', '/segments', { body: { name: 'All' } });
    const b = await call('POST', '/broadcasts', {
      body: { name: 'News', segment_id: seg.json.id, from: 'news@acme.test', subject: 'News', html: '<p>Hi</p>' },
    });
    const id = b.json.id as string;
    await call('GET', '/broadcasts');
    await call('PATCH', '/broadcasts/{id}', { params: { id }, body: { subject: 'More news' } });
    await call('GET', '/broadcasts/{id}', { params: { id } });
    await call('DELETE', '/broadcasts/{id}', { params: { id } });
    const a = await call('POST', '/automations', {
      body: {
        name: 'Welcome',
        trigger: { event: 'signed_up' },
        steps: [{ wait: '1d' }, { send: { template: 'welcome-docs', from: 'hello@acme.test' } }],
        status: 'disabled',
      },
    });
    await call('GET', '/automations');
    await call('GET', '/automations/{id}/runs', { params: { id: a.json.id as string } });
    // A run with one step behind it (the engine writes both; here SQL stands in for it).
    const waits = await call('POST', '/automations', {
      body: { name: 'Waits', trigger: { event: 'waits' }, steps: [{ wait: '1d' }, { wait: '1d' }] },
    });
    expect(waits.status, waits.text).to.equal(201);
    const contact = await call('POST', '/contacts', { body: { email: 'run@example.com' } });
    const [run] = await insertRuns(api.deps.sql, [
      {
        automation_id: waits.json.id as string,
        org_id: org.organization.id,
        contact_id: contact.json.id as string,
        occurrence: 'created',
        mode: 'live',
        steps: waits.json.steps as never,
        context: {} as never,
      },
    ]);
    await recordRunStep(api.deps.sql, {
      run_id: run!,
      step: 0,
      step_id: null,
      type: 'wait',
      started_at: new Date(),
      outcome: 'waited',
      next_step: 1,
      detail: {},
    });
    const wid = waits.json.id as string;
    const listed = await call('GET', '/automations/{id}/runs', { params: { id: wid }, query: 'status=active' });
    expect(listed.json.data).to.have.length(1);
    const detail = await call('GET', '/automations/{id}/runs/{run_id}', { params: { id: wid, run_id: run! } });
    expect(detail.json.history).to.have.length(1);
    await call('GET', '/automations/{id}/runs/{run_id}', { params: { id: wid, run_id: 'run_x' } });
    await call('GET', '/inbound');
    await call('GET', '/metrics');
    await call('GET', '/metrics', { query: 'days=7&facet=provider' });
    await call('GET', '/metrics', { query: 'days=91' }); // 422
  });

  it('bulk: imports, exports and suppression rules', async () => {
    const upload = await api.request('POST', '/contacts/imports', {
      token: admin,
      raw: 'email,first_name\nimported@example.com,Ivy\n',
      headers: { 'content-type': 'text/csv' },
    });
    expect(upload.status).to.equal(202);
    expect(schemaFor('POST', '/contacts/imports', 202)(upload.json)).to.equal(true);
    await call('GET', '/contacts/imports/{id}', { params: { id: upload.json.id as string } });
    await call('GET', '/contacts/imports');
    await call('GET', '/contacts/imports/{id}', { params: { id: 'imp_unknown' } }); // 404
    const exp = await call('POST', '/contacts/exports', { body: {} });
    await call('GET', '/contacts/exports/{id}', { params: { id: exp.json.id as string } });
    await call('GET', '/contacts/exports');
    await call('POST', '/suppressions', { body: { pattern: '*@rules.example' } });
    await call('POST', '/suppressions', { body: { pattern: 'no-star@rules.example' } }); // 422
  });

  it('covered the main resources', () => {
    const resources = new Set([...checked].map((c) => c.split(' ')[1]!.split('/')[1]));
    for (const r of [
      'keys',
      'domains',
      'emails',
      'templates',
      'suppressions',
      'webhooks',
      'contacts',
      'broadcasts',
      'metrics',
    ]) {
      expect(resources, r).to.include(r);
    }
    expect([...checked].some((c) => c.endsWith(' 404'))).to.equal(true);
    expect([...checked].some((c) => c.endsWith(' 422'))).to.equal(true);
  });
});
