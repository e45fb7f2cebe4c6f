// Every path that inserts rows in bulk, at its largest size (issue 11 item 1): each sends one
// array per column (shared/db/unnest.ts), so none meets the protocol's 65,535-parameter limit,
// which each of these passed with one parameter per cell. POST /emails/batch at its maximum is in
// emails-limits.int.test.ts.
import { expect } from 'chai';
import { saveParsedInbound, insertInbound } from '../../shared/db/inbound.js';
import { recordEvents, type NewEvent } from '../../shared/events.js';
import { newId } from '../../shared/ids.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { scanTriggers } from '../../workers/automation.js';
import { fanOutPending } from '../../workers/webhook-fanout.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';

describe('bulk inserts at their largest size', function () {
  this.timeout(120_000);
  let api: TestApi;
  let org: SeededOrg;
  let admin: string;
  let wdeps: WorkerDeps;
  let emailId: string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = (await org.mint({ permission: 'ADMIN' })).token;
    wdeps = workerDepsFor(api);
    emailId = newId('em');
    await api.deps.sql`
      insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, subject, text, message_id)
      values (${emailId}, ${org.organization.id}, ${org.domains['acme.test']!.id}, 'live', 'a@acme.test',
              'a@acme.test', '{b@example.com}', 's', 't', ${`${emailId}@acme.test`})`;
  });
  after(async () => {
    await wdeps.close();
    await api.close();
  });

  const post = (path: string, body: unknown) => api.request('POST', path, { token: admin, body });

  function events(n: number, type: NewEvent['type'], tag: string): NewEvent[] {
    return Array.from({ length: n }, (_, i) => ({
      orgId: org.organization.id,
      mode: 'live',
      type,
      dedupeKey: `${tag}:${i}`,
      emailId,
      recipient: `r${i}@example.com`,
      domainId: org.domains['acme.test']!.id,
      kind: 'receipt',
      data: { i, note: 'a "quoted" \\ value' },
    }));
  }

  it('records 30,000 events in one statement (the email.sent of a hand-over of 200 messages × 150 recipients)', async () => {
    const created = await recordEvents(api.deps.sql, events(30_000, 'email.sent', 'sent'));
    expect(created).to.have.length(30_000);
    expect(created[29_999]!.data).to.deep.equal({ i: 29_999, note: 'a "quoted" \\ value' });
    // Recording again creates nothing (dedupe keys).
    expect(await recordEvents(api.deps.sql, events(30_000, 'email.sent', 'sent'))).to.have.length(0);
  });

  it('fans 500 events out to 20 endpoints: 10,000 deliveries in one pass', async () => {
    for (let i = 0; i < 20; i++) {
      const res = await post('/webhooks', { url: `http://127.0.0.1:9/hook-${i}`, events: ['email.delivered'] });
      expect(res.status).to.equal(201);
    }
    await api.deps.sql`update events set webhooks_fanned_at = now() where webhooks_fanned_at is null`;
    await recordEvents(api.deps.sql, events(500, 'email.delivered', 'delivered'));
    const pass = await fanOutPending(wdeps, 500);
    expect(pass).to.deep.equal({ claimed: 500, deliveries: 10_000 });
    const [row] = await api.deps.sql<{ n: number; hooks: number; bodies: number }[]>`
      select count(*)::int as n, count(distinct webhook_id)::int as hooks,
             count(*) filter (where convert_from(body, 'UTF8')::jsonb->>'type' = 'email.delivered')::int as bodies
      from webhook_deliveries where status = 'pending'`;
    expect(row).to.deep.equal({ n: 10_000, hooks: 20, bodies: 10_000 });
  });

  it('starts 10,000 automation runs in one scan (500 events and 500 new contacts × 10 automations each)', async () => {
    for (let i = 0; i < 20; i++) {
      const trigger = i % 2 === 0 ? { contact_created: true } : { event: 'signed_up' };
      const res = await post('/automations', { name: `a${i}`, trigger, steps: [{ wait: '1h' }] });
      expect(res.status).to.equal(201);
    }
    const orgId = org.organization.id;
    await api.deps.sql`update contacts set automations_seen_at = now()`;
    await api.deps.sql`
      insert into contacts (id, org_id, email)
      select 'ct_bulk' || lpad(n::text, 5, '0'), ${orgId}, 'c' || n || '@example.com'
      from generate_series(1, 500) n`;
    await api.deps.sql`
      insert into contact_events (id, org_id, contact_id, name, properties, mode)
      select 'evt_bulk' || lpad(n::text, 5, '0'), ${orgId}, 'ct_bulk' || lpad(n::text, 5, '0'), 'signed_up',
             jsonb_build_object('plan', 'pro', 'n', n), 'live'
      from generate_series(1, 500) n`;
    expect(await scanTriggers(wdeps)).to.equal(10_000);
    const [row] = await api.deps.sql<{ n: number; contexts: number }[]>`
      select count(*)::int as n, count(*) filter (where context->>'plan' = 'pro')::int as contexts
      from automation_runs`;
    expect(row).to.deep.equal({ n: 10_000, contexts: 5_000 });
  });

  it('subscribes a contact to 100 topics (the schema’s most) in one request', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(newId('top'));
    await api.deps.sql`
      insert into topics (id, org_id, name, default_subscription)
      select id, ${org.organization.id}, 'topic ' || id, 'opt_out' from unnest(${ids}::text[]) id`;
    const res = await post('/contacts', {
      email: 'many-topics@example.com',
      topics: ids.map((id, i) => ({ id, subscription: i % 2 === 0 ? 'opt_in' : 'opt_out' })),
    });
    expect(res.status).to.equal(201);
    const [row] = await api.deps.sql<{ n: number; opted: number }[]>`
      select count(*)::int as n, count(*) filter (where subscription = 'opt_in')::int as opted
      from contact_topics where contact_id = ${res.json.id}`;
    expect(row).to.deep.equal({ n: 100, opted: 50 });
  });

  it('stores an inbound message’s 20,000 attachments in one statement', async () => {
    const id = await insertInbound(api.deps.sql, {
      orgId: org.organization.id,
      domainId: org.domains['acme.test']!.id,
      source: 'mx',
      mailFrom: 'x@example.com',
      rcptTo: ['r@reply.acme.test'],
      remoteAddress: '127.0.0.1',
      raw: Buffer.from('Subject: many parts\r\n\r\n.'),
    });
    const attachments = Array.from({ length: 20_000 }, (_, i) => ({
      id: newId('att'),
      filename: i % 3 === 0 ? null : `part-${i}.txt`,
      contentType: 'text/plain',
      contentId: null,
      content: Buffer.from([i % 256, 0, 92, 34]),
    }));
    const parsed = {
      orgId: org.organization.id,
      domainId: org.domains['acme.test']!.id,
      kind: 'reply' as const,
      fromAddress: 'x@example.com',
      to: ['r@reply.acme.test'],
      cc: [],
      subject: 'many parts',
      text: '.',
      html: null,
      headers: [],
      messageId: null,
      inReplyTo: null,
      emailId: null,
      autoReply: false,
      attachments,
    };
    await saveParsedInbound(api.deps.sql, id, parsed);
    // A re-run replaces them (idempotent).
    await saveParsedInbound(api.deps.sql, id, parsed);
    const rows = await api.deps.sql<{ position: number; filename: string | null; content: Buffer }[]>`
      select position, filename, content from inbound_attachments where inbound_id = ${id} order by position`;
    expect(rows).to.have.length(20_000);
    expect(rows[19_999]).to.deep.include({ position: 19_999, filename: 'part-19999.txt' });
    expect(rows[19_999]!.content.equals(attachments[19_999]!.content)).to.equal(true);
    expect(rows[3]!.filename).to.equal(null);
  });
});
