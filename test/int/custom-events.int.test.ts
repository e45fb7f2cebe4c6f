// POST /events (DESIGN §5 "Events and automations"): stored in contact_events for a later
// automation engine, 202 {object:"event", id}; SEND and above; closed to domain-restricted keys
// (SPEC "Domain restriction" 5); Idempotency-Key honoured.
import { expect } from 'chai';
import { markContactEventsConsumed, pendingContactEvents } from '../../shared/db/contact-events.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

type Key = { id: string; token: string };

describe('custom events (POST /events)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let send: Key;
  let sendTest: Key;
  let rSend: Key;
  let rFull: Key;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
    sendTest = await org.mint({ permission: 'SEND', mode: 'test' });
    rSend = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    rFull = await org.mint({ permission: 'FULL', domains: ['acme.test'] });
  });
  after(async () => api.close());

  const post = (token: string, body: unknown, headers: Record<string, string> = {}) =>
    api.request('POST', '/events', { token, body, headers });

  it('stores the event and creates the contact named by a new address', async () => {
    const res = await post(send.token, {
      name: 'signed_up',
      email: 'New@Example.test',
      properties: { plan: { id: 'pro' } },
    });
    expect(res.status).to.equal(202);
    expect(res.json).to.include({ object: 'event', name: 'signed_up' });
    expect(res.json.id).to.match(/^evt_[0-9A-Z]{26}$/);
    const contact = await api.request('GET', '/contacts/new@example.test', { token: send.token });
    expect(contact.status).to.equal(200);
    expect(res.json.contact_id).to.equal(contact.json.id);
    const [row] = await api.deps.sql`
      select org_id, contact_id, name, properties, key_id, mode, consumed_at from contact_events where id = ${res.json.id}`;
    expect(row).to.deep.equal({
      org_id: org.organization.id,
      contact_id: contact.json.id,
      name: 'signed_up',
      properties: { plan: { id: 'pro' } },
      key_id: send.id,
      mode: 'live',
      consumed_at: null,
    });
    // Not the message event log.
    const [mail] = await api.deps.sql`select 1 from events where id = ${res.json.id}`;
    expect(mail).to.equal(undefined);
  });

  it('names an existing contact by id or address without changing it; test keys are recorded as test', async () => {
    const c = await api.request('POST', '/contacts', {
      token: send.token,
      body: { email: 'known@example.test', first_name: 'Known' },
    });
    const byId = await post(sendTest.token, { name: 'viewed', contact_id: c.json.id });
    expect(byId.status).to.equal(202);
    expect(byId.json.contact_id).to.equal(c.json.id);
    const byEmail = await post(send.token, { name: 'viewed', email: 'KNOWN@example.test' });
    expect(byEmail.json.contact_id).to.equal(c.json.id);
    const after = await api.request('GET', `/contacts/${c.json.id}`, { token: send.token });
    expect(after.json.first_name).to.equal('Known');
    const [row] = await api.deps.sql`select mode, properties from contact_events where id = ${byId.json.id}`;
    expect(row).to.deep.equal({ mode: 'test', properties: {} });
  });

  it('leaves pending events for the automation engine to consume', async () => {
    const res = await post(send.token, { name: 'pending_probe', email: 'probe@example.test' });
    const pending = await pendingContactEvents(api.deps.sql, 1000);
    expect(pending.map((e) => e.id)).to.include(res.json.id);
    await markContactEventsConsumed(api.deps.sql, [res.json.id]);
    const later = await pendingContactEvents(api.deps.sql, 1000);
    expect(later.map((e) => e.id)).not.to.include(res.json.id);
  });

  it('refuses domain-restricted keys (403 forbidden_domain) and stores nothing', async () => {
    for (const k of [rSend, rFull]) {
      const res = await post(k.token, { name: 'x', email: 'restricted@example.test' });
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden_domain');
    }
    const [row] = await api.deps.sql`select 1 from contacts where email = 'restricted@example.test'`;
    expect(row).to.equal(undefined);
  });

  it('validates the body (422 naming the field)', async () => {
    const cases: [unknown, RegExp][] = [
      [{ email: 'a@example.test' }, /body\.name is required/],
      [{ name: 'x' }, /body\.email or body\.contact_id is required/],
      [{ name: 'x', email: 'a@example.test', contact_id: 'ct_01JAAAAAAAAAAAAAAAAAAAAAAA' }, /exactly one/],
      [{ name: 'x', email: 'nope' }, /body\.email must match format "email"/],
      [{ name: 'x', contact_id: 'ct_01JAAAAAAAAAAAAAAAAAAAAAAA' }, /body\.contact_id: .* is not a contact/],
      [{ name: 'x', contact_id: 'a@example.test' }, /body\.contact_id: .* is not a contact/],
      [{ name: '', email: 'a@example.test' }, /body\.name/],
      [{ name: 'x', email: 'a@example.test', properties: [1] }, /body\.properties must be object/],
      [{ name: 'x', email: 'a@example.test', extra: 1 }, /body\.extra is not a known field/],
    ];
    for (const [body, re] of cases) {
      const res = await post(send.token, body);
      expect(res.status, JSON.stringify(body)).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message, JSON.stringify(body)).to.match(re);
    }
  });

  it('honours Idempotency-Key: same body replays, another body conflicts', async () => {
    const headers = { 'Idempotency-Key': 'evt-key-1' };
    const body = { name: 'purchase', email: 'idem@example.test', properties: { amount: 5 } };
    const first = await post(send.token, body, headers);
    expect(first.status).to.equal(202);
    const again = await post(send.token, body, headers);
    expect(again.status).to.equal(202);
    expect(again.json).to.deep.equal(first.json);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    const rows = await api.deps.sql`select id from contact_events where name = 'purchase'`;
    expect(rows.map((r) => r.id)).to.deep.equal([first.json.id]);
    const other = await post(send.token, { ...body, properties: { amount: 6 } }, headers);
    expect(other.status).to.equal(409);
    expect(other.json.error.code).to.equal('idempotency_conflict');
  });
});
