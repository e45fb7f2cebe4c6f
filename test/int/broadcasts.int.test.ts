// Broadcasts (DESIGN §5): the Resend SDK's broadcasts.* against Tern, restricted-key and pause
// rules, the batched fan-out to a segment of 1,200 contacts (unsubscribed, topic opt-outs and
// suppressions skipped and counted exactly; one message per contact even when a batch runs
// again), scheduled sends, cancel between batches, and one-click unsubscribe from a broadcast.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { Resend } from 'resend';
import { findStalledBroadcasts } from '../../shared/db/broadcasts.js';
import { claimEmails, getDeliveryEmail, unclaimEmail } from '../../shared/db/delivery.js';
import { newId } from '../../shared/ids.js';
import * as tracker from '../../shared/tracking.js';
import { unsubscribeUrl } from '../../shared/tracking.js';
import { processBroadcastBatch, startBroadcastWorker } from '../../workers/broadcast.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { makeRenderer } from '../../workers/delivery/send.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

type Key = { id: string; token: string };

describe('broadcasts', () => {
  let api: TestApi;
  let org: SeededOrg;
  let wdeps: WorkerDeps;
  let admin: string;
  let send: Key;
  let full: Key;
  let rSend: Key;
  let resend: Resend;
  let topicId: string;
  let segmentId: string;
  let smallSegment: string;

  const sql = () => api.deps.sql;
  const expectOk = (res: { status: number; text: string }, status: number) =>
    expect(res.status, res.text).to.equal(status);
  const ok = <T extends { error: unknown; data: unknown }>(res: T): NonNullable<T['data']> => {
    expect(res.error).to.equal(null);
    return res.data as NonNullable<T['data']>;
  };
  const req = (method: string, path: string, token: string, body?: unknown) =>
    api.request(method, path, { token, ...(body === undefined ? {} : { body }) });

  async function seedContacts(prefix: string, n: number, domain: string) {
    const rows = Array.from({ length: n }, (_, i) => ({
      id: newId('ct'),
      org_id: org.organization.id,
      email: `${prefix}${String(i).padStart(4, '0')}@${domain}`,
      first_name: `F${i}`,
      automations_seen_at: new Date(),
    }));
    for (let i = 0; i < rows.length; i += 500) await sql()`insert into contacts ${sql()(rows.slice(i, i + 500))}`;
    return rows;
  }

  async function segment(name: string, domain: string): Promise<string> {
    const filter = { field: 'email', op: 'ends_with', value: `@${domain}` };
    const res = await req('POST', '/segments', admin, { name, filter });
    expect(res.status, res.text).to.equal(201);
    return res.json.id as string;
  }

  before(async function () {
    this.timeout(60_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    send = await org.mint({ permission: 'SEND' });
    full = await org.mint({ permission: 'FULL' });
    rSend = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
    wdeps = workerDepsFor(api);
    const previous = process.env.RESEND_BASE_URL;
    process.env.RESEND_BASE_URL = `${api.url}/api/v1`;
    try {
      resend = new Resend(send.token);
    } finally {
      if (previous === undefined) delete process.env.RESEND_BASE_URL;
      else process.env.RESEND_BASE_URL = previous;
    }
    const topic = await req('POST', '/topics', admin, { name: 'News', default_subscription: 'opt_in' });
    topicId = topic.json.id;
    segmentId = await segment('Big list', 'list.test');
    smallSegment = await segment('Small list', 'small.test');
  });
  after(async () => {
    await wdeps.close();
    await api.close();
  });

  describe('through the Resend SDK', () => {
    it('creates, gets, lists, updates, sends and removes', async () => {
      const created = await resend.broadcasts.create({
        name: 'Launch',
        from: 'News <news@acme.test>',
        subject: 'We launched',
        html: '<p>Hello</p>',
        segmentId: smallSegment,
        replyTo: 'support@acme.test',
      });
      expect(created.error).to.equal(null);
      const id = created.data!.id;
      expect(id).to.match(/^bc_/);

      const got = await resend.broadcasts.get(id);
      expect(got.error).to.equal(null);
      expect(got.data).to.deep.include({
        object: 'broadcast',
        id,
        name: 'Launch',
        from: 'News <news@acme.test>',
        subject: 'We launched',
        html: '<p>Hello</p>',
        text: null,
        segment_id: smallSegment,
        audience_id: smallSegment,
        topic_id: null,
        status: 'draft',
        scheduled_at: null,
        sent_at: null,
      });
      expect(got.data!.reply_to).to.deep.equal(['support@acme.test']);

      const updated = await resend.broadcasts.update(id, { name: 'Launch 2', subject: 'We launched!' });
      expect(updated.error).to.equal(null);
      expect(updated.data!.id).to.equal(id);
      const after = await resend.broadcasts.get(id);
      expect(after.data).to.deep.include({ name: 'Launch 2', subject: 'We launched!', html: '<p>Hello</p>' });

      const listed = await resend.broadcasts.list({ limit: 100 });
      expect(listed.error).to.equal(null);
      expect(listed.data!.object).to.equal('list');
      expect(listed.data!.data.map((b) => b.id)).to.include(id);

      const sent = await resend.broadcasts.send(id);
      expect(sent.error).to.equal(null);
      expect(sent.data!.id).to.equal(id);
      expect((await resend.broadcasts.get(id)).data!.status).to.equal('sending');

      const again = await resend.broadcasts.send(id);
      // Tern answers errors in the spec's shape, which the SDK hands back as it came.
      expect((again.error as unknown as { error: { code: string } }).error.code).to.equal('invalid_state');

      const draft = await resend.broadcasts.create({
        from: 'news@acme.test',
        subject: 'Temp',
        text: 'hi',
        audienceId: smallSegment,
      });
      const removed = await new Resend(full.token, { baseUrl: `${api.url}/api/v1` } as never).broadcasts.remove(
        draft.data!.id,
      );
      expect(removed.error, JSON.stringify(removed.error)).to.equal(null);
      expect(removed.data).to.deep.equal({ object: 'broadcast', id: draft.data!.id, deleted: true });
    });
  });

  describe('rules', () => {
    it('refuses bad input with 422 naming the field', async () => {
      const base = { from: 'news@acme.test', subject: 'S', html: '<p>x</p>', segment_id: smallSegment };
      const cases: [unknown, string][] = [
        [{ ...base, segment_id: 'seg_01J0000000000000000000000' }, 'body.segment_id'],
        [{ ...base, html: undefined }, 'body.html'],
        [{ ...base, template: 'nope' }, 'body.template'],
        [{ ...base, topic_id: 'top_nope' }, 'body.topic_id'],
        [{ ...base, from: 'news@unknown.test' }, 'body.from'],
        [{ ...base, reply_to: ['bad'] }, 'body.reply_to'],
        [{ ...base, scheduled_at: 'tomorrow' }, 'body.scheduled_at'],
        [{ ...base, extra: 1 }, 'extra'],
        [{ ...base, subject: undefined }, 'body.subject'],
      ];
      for (const [body, field] of cases) {
        const res = await req('POST', '/broadcasts', send.token, body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message).to.contain(field);
      }
      const bad = await api.request('POST', '/broadcasts', {
        token: send.token,
        raw: '{bad',
        headers: { 'content-type': 'application/json' },
      });
      expectError(bad, 400, 'invalid_json');
      expectError(await req('GET', '/broadcasts/bc_nope', send.token), 404, 'not_found');
    });

    it('keeps a domain-restricted key to its own domains', async () => {
      const body = { from: 'news@beta.test', subject: 'S', text: 'x', segment_id: smallSegment };
      const refused = await req('POST', '/broadcasts', rSend.token, body);
      expect(refused.status).to.equal(403);
      expect(refused.json.error.code).to.equal('forbidden_domain');

      const other = await req('POST', '/broadcasts', send.token, body);
      expect(other.status).to.equal(201);
      const own = await req('POST', '/broadcasts', rSend.token, { ...body, from: 'news@acme.test' });
      expect(own.status).to.equal(201);

      for (const [method, path] of [
        ['GET', ''],
        ['PATCH', ''],
        ['POST', '/send'],
        ['POST', '/cancel'],
      ] as const) {
        const res = await req(
          method,
          `/broadcasts/${other.json.id}${path}`,
          rSend.token,
          method === 'GET' ? undefined : {},
        );
        expect(res.status, `${method} ${path}`).to.equal(404);
        expect(res.json.error.code).to.equal('not_found');
      }
      const listed = await req('GET', '/broadcasts?limit=100', rSend.token);
      const ids = (listed.json.data as { id: string }[]).map((b) => b.id);
      expect(ids).to.include(own.json.id);
      expect(ids).to.not.include(other.json.id);
      // Moving its own draft to another domain is the same refusal.
      const moved = await req('PATCH', `/broadcasts/${own.json.id}`, rSend.token, { from: 'x@beta.test' });
      expect(moved.json.error.code).to.equal('forbidden_domain');
    });

    it('changes and deletes drafts only; deleting needs FULL', async () => {
      const b = await req('POST', '/broadcasts', send.token, {
        from: 'news@acme.test',
        subject: 'S',
        text: 'x',
        segment_id: smallSegment,
      });
      const forbidden = await req('DELETE', `/broadcasts/${b.json.id}`, send.token);
      expect(forbidden.status).to.equal(403);
      expect(forbidden.json.error.code).to.equal('forbidden');
      await req('POST', `/broadcasts/${b.json.id}/send`, send.token, { scheduled_at: 'in 10 min' });
      const patch = await req('PATCH', `/broadcasts/${b.json.id}`, send.token, { name: 'n' });
      expect(patch.status).to.equal(409);
      expect(patch.json.error.code).to.equal('invalid_state');
      expectError(await req('DELETE', `/broadcasts/${b.json.id}`, full.token), 409, 'invalid_state');
      expect((await req('POST', `/broadcasts/${b.json.id}/cancel`, send.token)).json.status).to.equal('canceled');
      expectError(await req('POST', `/broadcasts/${b.json.id}/cancel`, send.token), 409, 'invalid_state');
    });

    it('answers 403 sending_paused while the organization is paused', async () => {
      const b = await req('POST', '/broadcasts', send.token, {
        from: 'news@acme.test',
        subject: 'S',
        text: 'x',
        segment_id: smallSegment,
      });
      await sql()`update organizations set sending_paused = true where id = ${org.organization.id}`;
      await api.deps.auth.invalidateOrg(org.organization.id);
      try {
        const res = await req('POST', `/broadcasts/${b.json.id}/send`, send.token, {});
        expect(res.status).to.equal(403);
        expect(res.json.error.code).to.equal('sending_paused');
        const created = await req('POST', '/broadcasts', send.token, {
          from: 'news@acme.test',
          subject: 'S',
          text: 'x',
          segment_id: smallSegment,
          send: true,
        });
        expect(created.json.error.code).to.equal('sending_paused');
        expect((await req('GET', `/broadcasts/${b.json.id}`, send.token)).json.status).to.equal('draft');
      } finally {
        await sql()`update organizations set sending_paused = false where id = ${org.organization.id}`;
        await api.deps.auth.invalidateOrg(org.organization.id);
      }
    });

    it('replays a send with the same Idempotency-Key', async () => {
      const b = await req('POST', '/broadcasts', send.token, {
        from: 'news@acme.test',
        subject: 'S',
        text: 'x',
        segment_id: smallSegment,
      });
      const opts = { token: send.token, body: {}, headers: { 'idempotency-key': `k-${b.json.id}` } };
      const first = await api.request('POST', `/broadcasts/${b.json.id}/send`, opts);
      const second = await api.request('POST', `/broadcasts/${b.json.id}/send`, opts);
      expect(first.status).to.equal(200);
      expect(second.status).to.equal(200);
      expect(second.json).to.deep.equal(first.json);
    });
  });

  describe('fan-out to a segment of 1,200 contacts', () => {
    let broadcastId: string;
    let contacts: { id: string; email: string }[];
    const expected = { unsubscribed: 0, topic: 0, suppressed: 0 };

    before(async function () {
      this.timeout(60_000);
      contacts = await seedContacts('c', 1200, 'list.test');
      await seedContacts('o', 10, 'outside.test');
      // 1 in 20 unsubscribed; 1 in 25 opted out of the topic; 1 in 30 suppressed. Overlaps
      // count once, in that order of precedence.
      for (const [i, c] of contacts.entries()) {
        const unsub = i % 20 === 0;
        const optOut = i % 25 === 1 || i % 100 === 0;
        const supp = i % 30 === 2 || i % 60 === 0;
        if (unsub) await sql()`update contacts set unsubscribed = true where id = ${c.id}`;
        if (optOut)
          await sql()`insert into contact_topics (contact_id, topic_id, subscription) values (${c.id}, ${topicId}, 'opt_out')`;
        if (supp)
          await sql()`insert into suppressions (id, org_id, email, domain_id, reason)
                      values (${newId('sup')}, ${org.organization.id}, ${c.email}, ${i % 2 ? org.domains['acme.test']!.id : null}, 'manual')`;
        if (unsub) expected.unsubscribed++;
        else if (optOut) expected.topic++;
        else if (supp) expected.suppressed++;
      }
      // A suppression for another domain does not block a send from acme.test.
      await sql()`insert into suppressions (id, org_id, email, domain_id, reason)
                  values (${newId('sup')}, ${org.organization.id}, ${contacts[7]!.email}, ${org.domains['beta.test']!.id}, 'manual')`;
    });

    it('sends one message per subscribed, unsuppressed contact and counts the rest exactly', async function () {
      this.timeout(120_000);
      const created = await req('POST', '/broadcasts', send.token, {
        name: 'Big',
        from: 'News <news@acme.test>',
        subject: 'Monthly',
        html: '<html><body><p>News</p></body></html>',
        preview_text: 'This month',
        segment_id: segmentId,
        topic_id: topicId,
      });
      broadcastId = created.json.id;
      const worker = startBroadcastWorker(wdeps, { batchSize: 500, sweepEveryMs: 0 });
      try {
        const sent = await req('POST', `/broadcasts/${broadcastId}/send`, send.token, {});
        expect(sent.json).to.deep.include({ id: broadcastId, status: 'sending' });
        await waitFor('the broadcast to be sent', async () => {
          const b = await req('GET', `/broadcasts/${broadcastId}`, send.token);
          return b.json.status === 'sent' && b.json;
        });
      } finally {
        await worker.close();
      }
      const b = (await req('GET', `/broadcasts/${broadcastId}`, send.token)).json;
      const toSend = 1200 - expected.unsubscribed - expected.topic - expected.suppressed;
      expect(b.counts).to.deep.equal({
        recipients: 1200,
        sent: toSend,
        skipped_unsubscribed: expected.unsubscribed,
        skipped_suppressed: expected.suppressed,
        skipped_topic: expected.topic,
        failed: 0,
        canceled: 0,
      });
      expect(b.sent_at).to.be.a('string');

      const rows = await sql()<{ to: string; n: number }[]>`
        select to_addresses[1] as to, count(*)::int as n from emails
        where tags @> ${sql().json([{ name: 'broadcast_id', value: broadcastId }])} group by 1`;
      expect(rows).to.have.length(toSend);
      expect(rows.every((r) => r.n === 1)).to.equal(true);
      expect(rows.some((r) => r.to.endsWith('@outside.test'))).to.equal(false);
      const [one] = await sql()`
        select e.* from emails e join broadcast_recipients r on r.email_id = e.id
        where r.broadcast_id = ${broadcastId} limit 1`;
      expect(one).to.include({
        source: 'broadcast',
        kind: 'broadcast',
        topic_id: topicId,
        mode: 'live',
        status: 'queued',
      });
      expect(one!.html).to.contain('This month').and.contain('<p>News</p>');
      expect(await wdeps.queues['delivery-broadcast'].getJob(one!.id)).to.not.equal(undefined);
    });

    it('never sends twice when a batch runs again', async () => {
      const count = async () =>
        (
          await sql()`select count(*)::int as n from broadcast_recipients where broadcast_id = ${broadcastId} and email_id is not null`
        )[0]!.n as number;
      const before = await count();
      const stale = await processBroadcastBatch(wdeps, { broadcastId, after: null }, 500);
      expect(stale).to.deep.equal({ kind: 'idle', why: 'inactive' });
      // Lose the progress (as if the cursor had not been recorded) and run every batch again.
      await sql()`update broadcasts set status = 'sending', cursor = null where id = ${broadcastId}`;
      let after: string | null = null;
      for (let i = 0; i < 4; i++) {
        const r = await processBroadcastBatch(wdeps, { broadcastId, after }, 500);
        if (r.kind !== 'more' && r.kind !== 'done') throw new Error(`unexpected ${JSON.stringify(r)}`);
        expect(r.emailIds).to.deep.equal([]);
        if (r.kind === 'done') break;
        after = r.cursor;
      }
      expect(await count()).to.equal(before);
      const [emails] = await sql()`
        select count(*)::int as n from emails where tags @> ${sql().json([{ name: 'broadcast_id', value: broadcastId }])}`;
      expect(emails!.n).to.equal(before);
      expect((await req('GET', `/broadcasts/${broadcastId}`, send.token)).json.counts.recipients).to.equal(1200);
    });

    it('carries one-click unsubscribe, which opts the contact out of the topic', async () => {
      const [row] = await sql()`
        select e.id as email_id, rc.id as recipient_id, r.contact_id
        from broadcast_recipients r join emails e on e.id = r.email_id join email_recipients rc on rc.email_id = e.id
        where r.broadcast_id = ${broadcastId} limit 1`;
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
      await sql()`update domains set dkim_private_key = ${privateKey.export({ type: 'pkcs8', format: 'pem' }) as string}
                  where id = ${org.domains['acme.test']!.id}`;
      const email = (await getDeliveryEmail(sql(), row!.email_id))!;
      const raw = (await makeRenderer(wdeps, tracker, email)(row!.recipient_id)).toString();
      expect(raw).to.match(/^List-Unsubscribe:\s+<http:\/\/127\.0\.0\.1:\d+\/t\/u\/[^>]+>/m);
      expect(raw).to.match(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m);

      const url = unsubscribeUrl({
        baseUrl: api.url,
        secret: api.config.secretKey,
        emailId: row!.email_id,
        recipientId: row!.recipient_id,
      });
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'List-Unsubscribe=One-Click',
      });
      expect(res.status).to.be.lessThan(300);
      const [choice] = await sql()`
        select subscription from contact_topics where contact_id = ${row!.contact_id} and topic_id = ${topicId}`;
      expect(choice!.subscription).to.equal('opt_out');
      const [contact] = await sql()`select unsubscribed from contacts where id = ${row!.contact_id}`;
      expect(contact!.unsubscribed).to.equal(false);
      const supp = await sql()`select 1 from suppressions where source_email_id = ${row!.email_id}`;
      expect(supp).to.have.length(0);
      const [ev] =
        await sql()`select type from events where email_id = ${row!.email_id} and type = 'email.unsubscribed'`;
      expect(ev).to.not.equal(undefined);
    });
  });

  describe('scheduling, cancel and unsubscribe without a topic', () => {
    let contacts: { id: string }[];
    before(async () => {
      contacts = await seedContacts('s', 12, 'small.test');
    });

    it('sends a scheduled broadcast when its time comes', async () => {
      const created = await req('POST', '/broadcasts', send.token, {
        from: 'news@acme.test',
        subject: 'Later',
        text: 'later',
        segment_id: smallSegment,
        scheduled_at: 'in 10 min',
      });
      expect(created.json.status).to.equal('draft');
      const id = created.json.id as string;
      const sent = await req('POST', `/broadcasts/${id}/send`, send.token, {});
      expect(sent.json.status).to.equal('scheduled');
      expect(sent.json.scheduled_at).to.equal(created.json.scheduled_at);
      // Early: the job puts itself back.
      expect((await processBroadcastBatch(wdeps, { broadcastId: id, after: null })).kind).to.equal('early');
      await sql()`update broadcasts set scheduled_at = now() where id = ${id}`;
      const r = await processBroadcastBatch(wdeps, { broadcastId: id, after: null });
      expect(r.kind).to.equal('done');
      const b = (await req('GET', `/broadcasts/${id}`, send.token)).json;
      expect(b.status).to.equal('sent');
      expect(b.counts.sent).to.equal(12);
    });

    /** A broadcast to the small segment, sent, whose first batch of 5 messages is stored. */
    async function firstBatchOf(subject: string) {
      const created = await req('POST', '/broadcasts', send.token, {
        from: 'news@acme.test',
        subject,
        text: subject.toLowerCase(),
        segment_id: smallSegment,
      });
      const id = created.json.id as string;
      await req('POST', `/broadcasts/${id}/send`, send.token, {});
      const first = await processBroadcastBatch(wdeps, { broadcastId: id, after: null }, 5);
      if (first.kind !== 'more') throw new Error(`unexpected ${first.kind}`);
      return { id, first };
    }

    it('cancel stops the remaining batches and the messages not yet handed over', async () => {
      const { id, first } = await firstBatchOf('Stop');
      expect(first.emailIds).to.have.length(5);
      const canceled = await req('POST', `/broadcasts/${id}/cancel`, send.token);
      expect(canceled.json).to.deep.include({ status: 'canceled' });
      expect(canceled.json.counts).to.include({ sent: 5, canceled: 5 });
      expect((await req('GET', `/broadcasts/${id}`, send.token)).json.counts.canceled).to.equal(5);
      const next = await processBroadcastBatch(wdeps, { broadcastId: id, after: first.cursor }, 5);
      expect(next).to.deep.equal({ kind: 'idle', why: 'inactive' });
      const statuses = await sql()`select status from emails where id = any(${first.emailIds})`;
      expect(statuses.map((s) => s.status)).to.deep.equal(Array(5).fill('canceled'));
      const recipients = await sql()`select status from email_recipients where email_id = any(${first.emailIds})`;
      expect(recipients.map((r) => r.status)).to.deep.equal(Array(5).fill('canceled'));
    });

    it('a message a worker held while the broadcast was canceled is canceled when it is handed back', async () => {
      const { id, first } = await firstBatchOf('Held');
      // A worker claimed one message (then found it held: a cap, a pause) when the cancel came.
      const held = first.emailIds[0]!;
      expect(await claimEmails(sql(), [held])).to.deep.equal([held]);
      const canceled = await req('POST', `/broadcasts/${id}/cancel`, send.token);
      expect(canceled.json.counts).to.include({ canceled: 4 });
      await unclaimEmail(sql(), held);
      const [email] = await sql()`select status from emails where id = ${held}`;
      expect(email!.status).to.equal('canceled');
      const recipients = await sql()`select status from email_recipients where email_id = ${held}`;
      expect(recipients.map((r) => r.status)).to.deep.equal(['canceled']);
      expect((await req('GET', `/broadcasts/${id}`, send.token)).json.counts.canceled).to.equal(5);
      // A message of a broadcast still sending goes back to the queue, as before.
      const back = (await firstBatchOf('Going on')).first.emailIds[0]!;
      expect(await claimEmails(sql(), [back])).to.deep.equal([back]);
      await unclaimEmail(sql(), back);
      const [queued] = await sql()`select status from emails where id = ${back}`;
      expect(queued!.status).to.equal('queued');
    });

    it('unsubscribes the contact from every broadcast when the broadcast has no topic', async () => {
      const [row] = await sql()`
        select e.id as email_id, rc.id as recipient_id, r.contact_id
        from broadcast_recipients r join broadcasts b on b.id = r.broadcast_id and b.subject = 'Later'
        join emails e on e.id = r.email_id join email_recipients rc on rc.email_id = e.id
        where r.contact_id = ${contacts[3]!.id}`;
      const url = unsubscribeUrl({
        baseUrl: api.url,
        secret: api.config.secretKey,
        emailId: row!.email_id,
        recipientId: row!.recipient_id,
      });
      const res = await fetch(url, {
        method: 'POST',
        body: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).to.be.lessThan(300);
      const [contact] = await sql()`select unsubscribed from contacts where id = ${row!.contact_id}`;
      expect(contact!.unsubscribed).to.equal(true);
    });
  });
  describe("Resend's merge tags", () => {
    it("renders each contact's values, fallbacks and unsubscribe URL into subject, html and text", async () => {
      const [ann, anon] = [newId('ct'), newId('ct')];
      await sql()`insert into contacts ${sql()([
        {
          id: ann,
          org_id: org.organization.id,
          email: 'ann@merge.test',
          first_name: 'Ann & Co',
          properties: sql().json({ company: 'Acme' }),
          automations_seen_at: new Date(),
        },
        {
          id: anon,
          org_id: org.organization.id,
          email: 'anon@merge.test',
          first_name: null,
          properties: sql().json({}),
          automations_seen_at: new Date(),
        },
      ])}`;
      const created = ok(
        await resend.broadcasts.create({
          from: 'news@acme.test',
          segmentId: await segment('Merge', 'merge.test'),
          subject: 'News for {{{FIRST_NAME|you}}}',
          html: '<p>Hi {{{FIRST_NAME|there}}} of {{{COMPANY|your team}}}</p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a>',
          text: 'Hi {{{ FIRST_NAME | there }}} ({{{EMAIL}}}). Leave: {{{RESEND_UNSUBSCRIBE_URL}}}',
        }),
      );
      ok(await resend.broadcasts.send(created.id));
      expect((await processBroadcastBatch(wdeps, { broadcastId: created.id, after: null })).kind).to.equal('done');
      const rows = await sql()`
        select r.contact_id, e.id as email_id, e.subject, e.html, e.text, rc.id as recipient_id
        from broadcast_recipients r join emails e on e.id = r.email_id join email_recipients rc on rc.email_id = e.id
        where r.broadcast_id = ${created.id}`;
      const byContact = new Map(rows.map((r) => [r.contact_id as string, r]));
      const url = (r: (typeof rows)[number]) =>
        unsubscribeUrl({
          baseUrl: api.config.baseUrl,
          secret: api.config.secretKey,
          emailId: r.email_id,
          recipientId: r.recipient_id,
        });
      const a = byContact.get(ann)!;
      expect(a.subject).to.equal('News for Ann & Co');
      expect(a.html).to.equal(`<p>Hi Ann &amp; Co of Acme</p><a href="${url(a)}">Unsubscribe</a>`);
      expect(a.text).to.equal(`Hi Ann & Co (ann@merge.test). Leave: ${url(a)}`);
      const b = byContact.get(anon)!;
      expect(b.subject).to.equal('News for you');
      expect(b.html).to.equal(`<p>Hi there of your team</p><a href="${url(b)}">Unsubscribe</a>`);
      expect(b.text).to.equal(`Hi there (anon@merge.test). Leave: ${url(b)}`);

      const res = await fetch(url(b), {
        method: 'POST',
        body: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).to.be.lessThan(300);
      const [contact] = await sql()`select unsubscribed from contacts where id = ${anon}`;
      expect(contact!.unsubscribed).to.equal(true);
    });

    it('refuses a {{ it cannot render with a 422 naming it, on create and on update', async () => {
      const base = { from: 'news@acme.test', subject: 'S', html: '<p>x</p>', segment_id: smallSegment };
      const cases: [Record<string, unknown>, string][] = [
        [{ html: '<p>Hi {{first_name}}</p>' }, 'body.html: "{{first_name}}"'],
        [{ subject: 'Hi {{{FIRST_NAME|a|b}}}' }, 'body.subject: "{{{FIRST_NAME|a|b}}}"'],
        [{ text: 'Hi {{> partial}}' }, 'body.text: "{{> partial}}"'],
        [{ preview_text: '{{#if x}}' }, 'body.preview_text: "{{#if x}}"'],
      ];
      for (const [change, named] of cases) {
        const res = await req('POST', '/broadcasts', send.token, { ...base, ...change });
        expectError(res, 422, 'validation_error', JSON.stringify(change));
        expect(res.json.error.message).to.contain(named);
      }
      const draft = await req('POST', '/broadcasts', send.token, base);
      expect(draft.status, draft.text).to.equal(201);
      const patched = await req('PATCH', `/broadcasts/${draft.json.id}`, send.token, { html: 'Hi {{ name }}' });
      expectError(patched, 422, 'validation_error');
      expect(patched.json.error.message).to.contain('"{{ name }}" is not a merge tag');
    });
  });

  describe('with a test key', () => {
    it('creates and sends a broadcast whose messages are test messages, to the members of a static segment', async () => {
      const testKey = await org.mint({ permission: 'SEND', mode: 'test' });
      const seg = await req('POST', '/segments', admin, { name: 'Testers' });
      expect(seg.json.filter).to.deep.equal({ any: [] });
      for (const email of ['t1@testers.test', 't2@testers.test']) {
        const c = await req('POST', '/contacts', testKey.token, { email });
        expectOk(await req('POST', `/contacts/${c.json.id}/segments/${seg.json.id}`, testKey.token), 201);
      }
      const created = await req('POST', '/broadcasts', testKey.token, {
        from: 'news@acme.test',
        subject: 'Hi {{{FIRST_NAME|tester}}}',
        text: 'Trying it out',
        segment_id: seg.json.id,
      });
      expect(created.status, created.text).to.equal(201);
      expectOk(await req('POST', `/broadcasts/${created.json.id}/send`, testKey.token, {}), 200);
      expect((await processBroadcastBatch(wdeps, { broadcastId: created.json.id, after: null })).kind).to.equal('done');
      const rows = await sql()`
        select e.mode, e.subject, e.to_addresses from broadcast_recipients r join emails e on e.id = r.email_id
        where r.broadcast_id = ${created.json.id} order by e.to_addresses`;
      expect(rows.map((r) => [r.mode, r.subject, r.to_addresses])).to.deep.equal([
        ['test', 'Hi tester', ['t1@testers.test']],
        ['test', 'Hi tester', ['t2@testers.test']],
      ]);
      // A live key does not see the test broadcast (modes are apart, as for emails).
      expectError(await req('GET', `/broadcasts/${created.json.id}`, send.token), 404, 'not_found');
    });
  });

  describe('cancel while delivery claims its messages', () => {
    let raceSegment: string;
    /** Batches never held back by the messages earlier tests left in the queue. */
    let unpaced: WorkerDeps;
    before(async () => {
      await seedContacts('r', 600, 'race.test');
      raceSegment = await segment('Race list', 'race.test');
      unpaced = workerDepsFor(api, { BROADCAST_QUEUE_MAX: '0' });
    });
    after(async () => {
      await unpaced.close();
    });

    it('never deadlocks: each message ends either claimed by delivery or canceled', async function () {
      this.timeout(60_000);
      for (let round = 0; round < 3; round++) {
        const created = await req('POST', '/broadcasts', send.token, {
          from: 'news@acme.test',
          subject: `Race ${round}`,
          text: 'race',
          segment_id: raceSegment,
        });
        const id = created.json.id as string;
        await req('POST', `/broadcasts/${id}/send`, send.token, {});
        // 500 of the 600 contacts: the send is still going when it is canceled.
        const batch = await processBroadcastBatch(unpaced, { broadcastId: id, after: null }, 500);
        if (batch.kind !== 'more') throw new Error(`unexpected ${batch.kind}`);
        const ids = batch.emailIds;
        // Delivery claims the messages in batches of its own order while the broadcast is canceled.
        const claimers = Array.from({ length: 12 }, async (_, k) => {
          const mine = ids.filter((_, i) => i % 12 === k).reverse();
          const claimed: string[] = [];
          for (let i = 0; i < mine.length; i += 20) {
            await sql().begin(async (tx) => {
              claimed.push(...(await claimEmails(tx, mine.slice(i, i + 20))));
              await new Promise((r) => setTimeout(r, 2));
            });
          }
          return claimed;
        });
        const cancel = req('POST', `/broadcasts/${id}/cancel`, send.token);
        const [canceled, ...claimed] = await Promise.all([cancel, ...claimers]);
        expect(canceled.status, canceled.text).to.equal(200);
        const statuses = await sql()<{ status: string; n: number }[]>`
          select status, count(*)::int as n from emails where id = any(${ids}) group by 1`;
        const byStatus = Object.fromEntries(statuses.map((r) => [r.status, r.n]));
        expect((byStatus.processing ?? 0) + (byStatus.canceled ?? 0)).to.equal(ids.length);
        expect(byStatus.processing ?? 0).to.equal(claimed.flat().length);
        expect(canceled.json.counts.canceled).to.equal(byStatus.canceled ?? 0);
        // A claimed message's recipients are delivery's; a canceled one's are canceled with it.
        const mismatched = await sql()`
          select r.id from email_recipients r join emails e on e.id = r.email_id
          where e.id = any(${ids})
            and not ((e.status = 'canceled' and r.status = 'canceled') or (e.status = 'processing' and r.status = 'queued'))`;
        expect(mismatched).to.deep.equal([]);
      }
    });
  });

  describe('backpressure', () => {
    it('stores no next batch while the broadcast queue is full, keeps the send alive, and goes on once it drains', async () => {
      await seedContacts('p', 15, 'pace.test');
      const paceSegment = await segment('Pace list', 'pace.test');
      const queue = wdeps.queues['delivery-broadcast'];
      const max = (await queue.waiting()) + 5;
      const paced = workerDepsFor(api, { BROADCAST_QUEUE_MAX: String(max) });
      try {
        const created = await req('POST', '/broadcasts', send.token, {
          from: 'news@acme.test',
          subject: 'Paced',
          text: 'one batch at a time',
          segment_id: paceSegment,
        });
        const id = created.json.id as string;
        await req('POST', `/broadcasts/${id}/send`, send.token, {});
        // The first batch fills the queue up to its limit; the next one stores nothing.
        const first = await processBroadcastBatch(paced, { broadcastId: id, after: null }, 5);
        if (first.kind !== 'more') throw new Error(`unexpected ${first.kind}`);
        await sql()`update broadcasts set updated_at = now() - interval '1 hour' where id = ${id}`;
        const held = await processBroadcastBatch(paced, { broadcastId: id, after: first.cursor }, 5);
        expect(held).to.deep.equal({ kind: 'paced' });
        const [row] = await sql()`select count_sent, cursor, status, updated_at from broadcasts where id = ${id}`;
        expect(row).to.include({ count_sent: 5, cursor: first.cursor, status: 'sending' });
        // Touched: the sweeper does not take a paced send for a stalled one.
        expect(Date.now() - (row!.updated_at as Date).getTime()).to.be.below(60_000);
        expect((await findStalledBroadcasts(sql(), 120, 100)).map((b) => b.id)).to.not.include(id);
        // Its next look is a delayed job of the broadcast queue.
        const delayed = await paced.queues.broadcast.getJobs(['delayed'], 0, -1);
        expect(delayed.some((j) => j.data.broadcastId === id && j.data.after === first.cursor)).to.equal(true);
        // Delivery takes the batch's messages: the next batch goes ahead.
        for (const emailId of first.emailIds) await (await queue.getJob(emailId))!.remove();
        const next = await processBroadcastBatch(paced, { broadcastId: id, after: first.cursor }, 5);
        expect(next.kind).to.equal('more');
        // A limit of 0 never holds a batch back.
        const unpaced = workerDepsFor(api, { BROADCAST_QUEUE_MAX: '0' });
        try {
          if (next.kind !== 'more') throw new Error('unreachable');
          const last = await processBroadcastBatch(unpaced, { broadcastId: id, after: next.cursor }, 5);
          expect(last.kind).to.equal('more');
        } finally {
          await unpaced.close();
        }
      } finally {
        await paced.close();
      }
    });
  });
});
