import { expect } from 'chai';
import { recordEvents } from '../../shared/events.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('emails: list, get, events, reschedule, cancel', () => {
  let api: TestApi;
  let org: SeededOrg;
  let send: { id: string; token: string };
  let test: { id: string; token: string };
  let beta: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
    test = await org.mint({ permission: 'SEND', mode: 'test' });
    beta = await org.mint({ permission: 'SEND', domains: ['beta.test'] });
  });
  after(async () => api.close());

  const post = async (body: Record<string, unknown>, token = send.token): Promise<string> => {
    const res = await api.request('POST', '/emails', {
      token,
      body: { from: 'hi@acme.test', to: 'x@example.com', subject: 's', html: '<b>h</b>', ...body },
    });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  };
  const get = (path: string, token = send.token) => api.request('GET', path, { token });

  describe('GET /emails/:id', () => {
    it('returns the Resend-style record with recipients', async () => {
      const id = await post({
        to: ['Ann <ann@example.com>'],
        cc: 'c@example.com',
        tags: [{ name: 't', value: 'v' }],
        kind: 'receipt',
        reply_to: 'r@acme.test',
      });
      const res = await get(`/emails/${id}`);
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.include({
        object: 'email',
        id,
        from: 'hi@acme.test',
        to: ['Ann <ann@example.com>'],
        cc: ['c@example.com'],
        bcc: [],
        reply_to: ['r@acme.test'],
        subject: 's',
        html: '<b>h</b>',
        text: null,
        tags: [{ name: 't', value: 'v' }],
        kind: 'receipt',
        template: null,
        mode: 'live',
        scheduled_at: null,
        last_event: 'queued',
      });
      expect(res.json.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(res.json.recipients).to.deep.equal([
        {
          email: 'ann@example.com',
          field: 'to',
          status: 'queued',
          last_event_at: null,
          wait_reason: null,
          last_response: null,
          tls: null,
        },
        {
          email: 'c@example.com',
          field: 'cc',
          status: 'queued',
          last_event_at: null,
          wait_reason: null,
          last_response: null,
          tls: null,
        },
      ]);
    });

    it('404 for unknown ids, other modes and, for a restricted key, other domains', async () => {
      const id = await post({});
      expect((await get('/emails/em_01HZZZZZZZZZZZZZZZZZZZZZZZ')).status).to.equal(404);
      expect((await get('/emails/nonsense')).status).to.equal(404);
      const t = await get(`/emails/${id}`, test.token);
      expect(t.status).to.equal(404);
      expect(t.json.error.code).to.equal('not_found');
      expectError(await get(`/emails/${id}`, beta.token), 404, 'not_found');
      const own = await post({ from: 'x@beta.test' }, beta.token);
      expect((await get(`/emails/${own}`, beta.token)).status).to.equal(200);
    });
  });

  describe('GET /emails/:id/events', () => {
    it('lists the events of the message in order', async () => {
      const id = await post({});
      const [r] = await api.deps.sql`select id from email_recipients where email_id = ${id}`;
      const base = {
        orgId: org.organization.id,
        mode: 'live' as const,
        emailId: id,
        recipientId: r!.id,
        recipient: 'x@example.com',
      };
      await recordEvents(api.deps.sql, [
        { ...base, type: 'email.sent', dedupeKey: `${r!.id}:sent` },
        { ...base, type: 'email.bounced', bounceType: 'hard', detail: 'NoEmail', dedupeKey: `${r!.id}:bounced` },
      ]);
      await api.deps.sql`update emails set last_event = 'email.bounced', status = 'sent' where id = ${id}`;
      const res = await get(`/emails/${id}/events`);
      expect(res.status).to.equal(200);
      expect(res.json.object).to.equal('list');
      expect(res.json.data.map((e: { type: string }) => e.type)).to.deep.equal(['email.sent', 'email.bounced']);
      expect(res.json.data[1]).to.include({ recipient: 'x@example.com', bounce_type: 'hard', detail: 'NoEmail' });
      expect(res.json.data[0]).to.not.have.property('bounce_type');
      expect((await get(`/emails/${id}`)).json.last_event).to.equal('bounced');
      expectError(await get(`/emails/${id}/events`, beta.token), 404, 'not_found');
    });
  });

  describe('GET /emails', () => {
    let ids: string[];
    before(async () => {
      ids = [];
      ids.push(await post({ kind: 'k1', tags: [{ name: 'cat', value: 'a' }], to: 'one@list.test' }));
      ids.push(await post({ kind: 'k2', tags: [{ name: 'cat', value: 'b' }], to: 'two@list.test' }));
      ids.push(await post({ kind: 'k1', cc: 'One@List.test', to: 'three@list.test', scheduled_at: 'in 1 hour' }));
    });

    it('lists newest first with cursor pagination', async () => {
      const p1 = await get('/emails?limit=2');
      expect(p1.status).to.equal(200);
      expect(p1.json.has_more).to.equal(true);
      expect(p1.json.data.map((e: { id: string }) => e.id)).to.deep.equal([ids[2], ids[1]]);
      const p2 = await get(`/emails?limit=2&after=${ids[1]}`);
      expect(p2.json.data[0].id).to.equal(ids[0]);
      const back = await get(`/emails?limit=1&before=${ids[0]}`);
      expect(back.json.data.map((e: { id: string }) => e.id)).to.deep.equal([ids[1]]);
      expect(back.json.has_more).to.equal(true);
    });

    it('filters by kind, tag, status, to and created range', async () => {
      const listed = async (q: string) => (await get(`/emails?${q}`)).json.data.map((e: { id: string }) => e.id);
      expect(await listed('kind=k1&limit=2')).to.deep.equal([ids[2], ids[0]]);
      expect(await listed('tag=cat:b')).to.deep.equal([ids[1]]);
      expect(await listed('tag=cat&limit=2')).to.deep.equal([ids[1], ids[0]]);
      expect(await listed('status=scheduled&kind=k1')).to.deep.equal([ids[2]]);
      expect(await listed('to=one@list.test')).to.deep.equal([ids[2], ids[0]]);
      const [first] = await api.deps.sql`select created_at from emails where id = ${ids[0]!}`;
      // created_at has microseconds; the next millisecond is strictly after the first message.
      const after = new Date(first!.created_at.getTime() + 1).toISOString();
      expect(await listed(`to=one@list.test&created_after=${after}`)).to.deep.equal([ids[2]]);
      const before = await listed(`kind=k1&created_before=${encodeURIComponent(after)}`);
      expect(before).to.include(ids[0]).and.not.include(ids[2]);
      const bad = await get('/emails?status=lost');
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.contain('query.status');
      expectError(await get('/emails?created_after=yesterday'), 422, 'validation_error');
    });

    it('lists test and live apart, and a restricted key only its domains', async () => {
      const tid = await post({}, test.token);
      const live = (await get('/emails?limit=100')).json.data.map((e: { id: string }) => e.id);
      expect(live).to.not.include(tid);
      const tl = await get('/emails?limit=100', test.token);
      expect(tl.json.data.map((e: { id: string }) => e.id)).to.deep.equal([tid]);
      expect(tl.json.data[0].mode).to.equal('test');
      const b = (await get('/emails?limit=100', beta.token)).json.data;
      expect(b.length).to.be.greaterThan(0);
      expect(b.every((e: { from: string }) => e.from.endsWith('@beta.test'))).to.equal(true);
    });
  });

  describe('PATCH /emails/:id (reschedule)', () => {
    it('moves a scheduled email and its delayed job', async () => {
      const id = await post({ scheduled_at: 'in 1 hour' });
      const at = new Date(Date.now() + 2 * 3600_000);
      const res = await api.request('PATCH', `/emails/${id}`, {
        token: send.token,
        body: { scheduled_at: at.toISOString() },
      });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({ object: 'email', id });
      const e = (await get(`/emails/${id}`)).json;
      expect(e.scheduled_at).to.equal(at.toISOString());
      expect(e.recipients[0].wait_reason).to.equal(`scheduled for ${at.toISOString()}`);
      const job = await api.deps.queues.delivery.getJob(id);
      expect(await job!.isDelayed()).to.equal(true);
      expect(job!.timestamp + job!.delay).to.be.within(at.getTime() - 5000, at.getTime() + 5000);
    });

    it('409 invalid_state for an email that is not scheduled; 422 for a bad date', async () => {
      const id = await post({});
      const res = await api.request('PATCH', `/emails/${id}`, {
        token: send.token,
        body: { scheduled_at: 'in 5 min' },
      });
      expect(res.status).to.equal(409);
      expect(res.json.error.code).to.equal('invalid_state');
      const sid = await post({ scheduled_at: 'in 1 hour' });
      const bad = await api.request('PATCH', `/emails/${sid}`, {
        token: send.token,
        body: { scheduled_at: '2001-01-01T00:00:00Z' },
      });
      expectError(bad, 422, 'validation_error');
      expect(bad.json.error.message).to.contain('body.scheduled_at');
      const missing = await api.request('PATCH', `/emails/${sid}`, { token: send.token, body: {} });
      expectError(missing, 422, 'validation_error');
    });
  });

  describe('POST /emails/:id/cancel', () => {
    it('cancels a scheduled email and removes its job', async () => {
      const id = await post({ scheduled_at: 'in 1 hour' });
      expect(await api.deps.queues.delivery.getJob(id)).to.not.equal(undefined);
      const res = await api.request('POST', `/emails/${id}/cancel`, { token: send.token });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({ object: 'email', id });
      const e = (await get(`/emails/${id}`)).json;
      expect(e.status).to.equal('canceled');
      expect(e.recipients[0].status).to.equal('canceled');
      expect(await api.deps.queues.delivery.getJob(id)).to.equal(undefined);
      const again = await api.request('POST', `/emails/${id}/cancel`, { token: send.token });
      expectError(again, 409, 'invalid_state');
    });

    it('cancels a queued email not yet handed over', async () => {
      const id = await post({});
      const res = await api.request('POST', `/emails/${id}/cancel`, { token: send.token });
      expect(res.status).to.equal(200);
      expect(await api.deps.queues.delivery.getJob(id)).to.equal(undefined);
    });

    it('409 invalid_state once the email is processing', async () => {
      const id = await post({});
      await api.deps.sql`update emails set status = 'processing' where id = ${id}`;
      const res = await api.request('POST', `/emails/${id}/cancel`, { token: send.token });
      expect(res.status).to.equal(409);
      expect(res.json.error.code).to.equal('invalid_state');
      const [e] = await api.deps.sql`select status from emails where id = ${id}`;
      expect(e!.status).to.equal('processing');
    });

    it("404 for a restricted key on another domain's email", async () => {
      const id = await post({ scheduled_at: 'in 1 hour' });
      const res = await api.request('POST', `/emails/${id}/cancel`, { token: beta.token });
      expectError(res, 404, 'not_found');
    });
  });
});
