import { expect } from 'chai';
import { Resend } from 'resend';
import { verify } from '../../shared/webhooks/signing.js';
import { type Received } from '../helpers/receiver.js';
import { seedEmail, seedEvent } from '../helpers/webhook-seed.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { waitFor } from '../helpers/wait.js';

const json = (r: Received) => JSON.parse(r.raw.toString('utf8'));

/** The Resend SDK's verifier (Standard Webhooks): the parsed payload, or a throw. */
const resendVerify = (r: Received, secret: string): unknown =>
  new Resend('re_verify').webhooks.verify({
    payload: r.raw.toString('utf8'),
    headers: {
      id: String(r.headers['webhook-id']),
      timestamp: String(r.headers['webhook-timestamp']),
      signature: String(r.headers['webhook-signature']),
    },
    webhookSecret: secret,
  });

describe('webhook delivery', () => {
  let s: WebhookStack;
  let domainId: string;
  let orgId: string;

  before(async () => {
    s = await startWebhookStack({
      respond: (req) => {
        const path = req.path;
        if (path.startsWith('/fail')) return 500;
        if (path.startsWith('/redirect')) return (res) => res.writeHead(302, { location: '/ok-target' }).end();
        if (path.startsWith('/hang')) return 'hang';
        return 200;
      },
      delivery: { schedule: [150, 300], timeoutMs: 600 },
    });
    domainId = s.org.domains['acme.test']!.id;
    orgId = s.org.organization.id;
  });
  after(async () => s.close());

  async function deliveries(webhookId: string) {
    const res = await s.api.request('GET', `/webhooks/${webhookId}/deliveries`, { token: s.org.key.token });
    expect(res.status).to.equal(200);
    return res.json.data as any[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  }

  it('delivers every email.* type with exact headers, body and a verifying signature', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/all` });
    const email = await seedEmail(s.api.deps.sql, {
      orgId,
      domainId,
      to: ['Ann <ann@example.com>', 'bob@example.com'],
      cc: ['carl@example.com'],
      subject: 'Your order',
    });
    const extras: Record<string, object> = {
      'email.bounced': { bounceType: 'hard', detail: 'NoEmail' },
      'email.delivery_delayed': { detail: 'MailboxFull' },
      'email.clicked': { url: 'https://acme.test/pricing' },
      'email.failed': { detail: 'render error' },
    };
    const types = [
      'email.sent',
      'email.delivered',
      'email.delivery_delayed',
      'email.bounced',
      'email.complained',
      'email.rejected',
      'email.opened',
      'email.clicked',
      'email.unsubscribed',
      'email.failed',
    ] as const;
    const events = [];
    for (const t of types) events.push(await seedEvent(s.api.deps.sql, email, t, 'bob@example.com', extras[t] ?? {}));
    await s.publish(events.map((e) => e.id));
    const got = await s.receiver.waitForRequests(types.length, (r) => r.path === '/all');
    for (const ev of events) {
      const r = got.find((x) => x.headers['tern-event-type'] === ev.type);
      expect(r, ev.type).to.not.equal(undefined);
      expect(r!.headers['content-type']).to.equal('application/json');
      expect(r!.headers['user-agent']).to.equal('tern-webhooks/1');
      expect(r!.headers['tern-delivery-id']).to.match(/^dlv_[0-9A-Z]{26}$/);
      expect(r!.headers['tern-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verify(r!.raw, r!.headers['tern-signature'] as string, wh.signing_secret)).to.equal(true);
      // Standard Webhooks beside it: same delivery id and time, checked by the Resend SDK.
      expect(r!.headers['webhook-id']).to.equal(r!.headers['tern-delivery-id']);
      expect(r!.headers['tern-signature']).to.contain(`t=${String(r!.headers['webhook-timestamp'])},`);
      expect(r!.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(resendVerify(r!, wh.signing_secret)).to.deep.equal(json(r!));
      expect(() => resendVerify(r!, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).to.throw(/signature/i);
      const data: Record<string, unknown> = {
        email_id: email.id,
        from: 'Acme <news@acme.test>',
        to: ['Ann <ann@example.com>', 'bob@example.com'],
        subject: 'Your order',
        recipient: 'bob@example.com',
        kind: null,
        tags: null,
        stream: 'transactional',
      };
      if (ev.type === 'email.bounced') data.bounce_type = 'hard';
      const extra = extras[ev.type] as { detail?: string; url?: string } | undefined;
      if (extra?.detail) data.detail = extra.detail;
      if (extra?.url) data.url = extra.url;
      // Recorded without a judgement (DESIGN §20): a person's.
      if (ev.type === 'email.opened' || ev.type === 'email.clicked') {
        Object.assign(data, { machine: false, machine_reason: null });
      }
      expect(json(r!)).to.deep.equal({ type: ev.type, created_at: ev.created_at.toISOString(), data });
      expect(json(r!).created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    // The worker records an attempt after the receiver has answered: wait (in the database, not
    // through the rate-limited API) until none is pending, then read the list once.
    await waitFor(
      'every delivery recorded',
      async () => {
        const [row] = await s.api.deps.sql<{ done: number }[]>`
        select count(*)::int as done from webhook_deliveries where webhook_id = ${wh.id} and status <> 'pending'`;
        return row!.done >= types.length;
      },
      15_000,
    );
    const list = await deliveries(wh.id);
    expect(list).to.have.length(types.length);
    expect(list.every((d) => d.status === 'succeeded' && d.attempts === 1 && d.last_status_code === 200)).to.equal(
      true,
    );
    expect(list[0].history[0]).to.include({ attempt: 1, status_code: 200, error: null });
    expect(list[0].history[0].latency_ms).to.be.a('number');
  });

  it('carries kind, tags and the template object; fires for test-mode messages', async () => {
    await s.createWebhook({ url: `${s.receiver.url}/tags`, events: ['email.delivered'] });
    const tagged = await seedEmail(s.api.deps.sql, {
      orgId,
      domainId,
      mode: 'test',
      to: ['dee@example.com'],
      kind: 'receipt',
      tags: [{ name: 'plan', value: 'pro' }],
    });
    const templated = await seedEmail(s.api.deps.sql, {
      orgId,
      domainId,
      to: ['eve@example.com'],
      template: { slug: 'welcome', version: 3 },
    });
    const a = await seedEvent(s.api.deps.sql, tagged, 'email.delivered', 'dee@example.com');
    const b = await seedEvent(s.api.deps.sql, templated, 'email.delivered', 'eve@example.com');
    const skipped = await seedEvent(s.api.deps.sql, templated, 'email.opened', 'eve@example.com');
    await s.publish([a.id, b.id, skipped.id]);
    const got = await s.receiver.waitForRequests(2, (r) => r.path === '/tags');
    const byEmail = (id: string) => got.map(json).find((p) => p.data.email_id === id);
    expect(byEmail(tagged.id).data).to.include({ kind: 'receipt' });
    expect(byEmail(tagged.id).data.tags).to.deep.equal([{ name: 'plan', value: 'pro' }]);
    const tpl = byEmail(templated.id).data.tags;
    expect(tpl.template).to.include({ slug: 'welcome', version: 3 });
    expect(tpl.template.id).to.match(/^tpl_/);
    expect(tpl.tags).to.deep.equal([]);
    expect(byEmail(templated.id).data.kind).to.equal(null);
  });

  it('delivers email.received with email_id only when threaded', async () => {
    await s.createWebhook({ url: `${s.receiver.url}/inbound`, events: ['email.received'] });
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId });
    const { recordEvents } = await import('../../shared/events.js');
    const data = { from: 'ann@example.com', to: ['support@reply.acme.test'], subject: 'Re: Hello' };
    const [threaded, loose] = await recordEvents(s.api.deps.sql, [
      { orgId, mode: 'live', type: 'email.received', dedupeKey: 'inb_1', inboundId: 'inb_1', emailId: email.id, data },
      { orgId, mode: 'live', type: 'email.received', dedupeKey: 'inb_2', inboundId: 'inb_2', data },
    ]);
    await s.publish([threaded!.id, loose!.id]);
    const got = (await s.receiver.waitForRequests(2, (r) => r.path === '/inbound')).map(json);
    expect(got.find((p) => p.data.inbound_id === 'inb_1')).to.deep.equal({
      type: 'email.received',
      created_at: threaded!.created_at.toISOString(),
      data: { inbound_id: 'inb_1', email_id: email.id, ...data },
    });
    expect(got.find((p) => p.data.inbound_id === 'inb_2').data).to.deep.equal({
      inbound_id: 'inb_2',
      ...data,
    });
  });

  it('retries a 500 on the schedule with the same bytes and id, then fails', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/fail`, events: ['email.sent'] });
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId, to: ['f@example.com'] });
    const ev = await seedEvent(s.api.deps.sql, email, 'email.sent', 'f@example.com');
    await s.publish([ev.id]);
    const got = await s.receiver.waitForRequests(3, (r) => r.path === '/fail');
    expect(new Set(got.map((r) => r.headers['tern-delivery-id'])).size).to.equal(1);
    expect(got.every((r) => r.raw.equals(got[0]!.raw))).to.equal(true);
    expect(got[1]!.at - got[0]!.at).to.be.at.least(150 * 0.9 - 20);
    expect(got[2]!.at - got[1]!.at).to.be.at.least(300 * 0.9 - 20);
    const [d] = await waitFor('the delivery to fail', async () => {
      const l = await deliveries(wh.id);
      return l[0]?.status === 'failed' ? l : null;
    });
    expect(d).to.include({ attempts: 3, last_status_code: 500, next_attempt_at: null });
    expect(d.history.map((h: { status_code: number }) => h.status_code)).to.deep.equal([500, 500, 500]);
    expect(d.last_error).to.contain('HTTP 500');
    // Manual retry: same delivery id, same body, one more attempt.
    const previous = s.receiver.respond;
    s.receiver.respond = (r, n) => (r.path === '/fail' ? 200 : previous(r, n));
    const retry = await s.api.request('POST', `/webhooks/${wh.id}/deliveries/${d.id}/retry`, {
      token: s.org.key.token,
    });
    expect(retry.status).to.equal(202);
    const again = await s.receiver.waitForRequests(4, (r) => r.path === '/fail');
    expect(again[3]!.headers['tern-delivery-id']).to.equal(d.id);
    expect(again[3]!.raw.equals(got[0]!.raw)).to.equal(true);
    await waitFor('the retried delivery to succeed', async () => (await deliveries(wh.id))[0]?.status === 'succeeded');
  });

  it('does not follow a redirect (3xx is a failure)', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/redirect`, events: ['email.complained'] });
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId, to: ['g@example.com'] });
    await s.publish([(await seedEvent(s.api.deps.sql, email, 'email.complained', 'g@example.com')).id]);
    const [d] = await waitFor('the delivery to fail', async () => {
      const l = await deliveries(wh.id);
      return l[0]?.status === 'failed' ? l : null;
    });
    expect(d.last_status_code).to.equal(302);
    expect(s.receiver.received.filter((r) => r.path === '/ok-target')).to.have.length(0);
  });

  it('times out a receiver that does not answer, retries, then fails', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/hang`, events: ['email.rejected'] });
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId, to: ['h@example.com'] });
    await s.publish([(await seedEvent(s.api.deps.sql, email, 'email.rejected', 'h@example.com')).id]);
    const [d] = await waitFor('the delivery to fail', async () => {
      const l = await deliveries(wh.id);
      return l[0]?.status === 'failed' ? l : null;
    });
    expect(d.attempts).to.equal(3);
    expect(d.last_status_code).to.equal(null);
    expect(d.history.every((h: { error: string }) => h.error.startsWith('timeout'))).to.equal(true);
  });

  it('signs with both secrets during a rotation', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/rotate`, events: ['email.opened'] });
    const rot = await s.api.request('POST', `/webhooks/${wh.id}/rotate-secret`, {
      token: s.org.key.token,
      body: { expires_in: 3600 },
    });
    expect(rot.status).to.equal(200);
    expect(rot.json.signing_secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId, to: ['i@example.com'] });
    await s.publish([(await seedEvent(s.api.deps.sql, email, 'email.opened', 'i@example.com')).id]);
    const [r] = await s.receiver.waitForRequests(1, (x) => x.path === '/rotate');
    const header = r!.headers['tern-signature'] as string;
    expect(header).to.match(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verify(r!.raw, header, wh.signing_secret)).to.equal(true);
    expect(verify(r!.raw, header, rot.json.signing_secret)).to.equal(true);
    expect(r!.headers['webhook-signature']).to.match(/^v1,\S{44} v1,\S{44}$/);
    expect(resendVerify(r!, wh.signing_secret)).to.deep.equal(json(r!));
    expect(resendVerify(r!, rot.json.signing_secret)).to.deep.equal(json(r!));
  });

  it('sends a sample event through the same pipeline (POST /webhooks/{id}/test)', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/sample`, events: ['email.sent'] });
    const res = await s.api.request('POST', `/webhooks/${wh.id}/test`, {
      token: s.org.key.token,
      body: { type: 'email.bounced' },
    });
    expect(res.status).to.equal(202);
    const [r] = await s.receiver.waitForRequests(1, (x) => x.path === '/sample');
    expect(r!.headers['tern-delivery-id']).to.equal(res.json.id);
    expect(r!.headers['tern-event-type']).to.equal('email.bounced');
    expect(json(r!).data).to.include({ bounce_type: 'hard', detail: 'NoEmail' });
    expect(verify(r!.raw, r!.headers['tern-signature'] as string, wh.signing_secret)).to.equal(true);
  });

  it('fans out once per endpoint even when the event is published twice', async () => {
    const wh = await s.createWebhook({ url: `${s.receiver.url}/once`, events: ['email.unsubscribed'] });
    const email = await seedEmail(s.api.deps.sql, { orgId, domainId, to: ['j@example.com'] });
    const ev = await seedEvent(s.api.deps.sql, email, 'email.unsubscribed', 'j@example.com');
    await s.publish([ev.id]);
    await s.receiver.waitForRequests(1, (x) => x.path === '/once');
    const { fanOutEvent } = await import('../../workers/webhook-fanout.js');
    const { workerDepsFor } = await import('../helpers/workers.js');
    const deps = workerDepsFor(s.api);
    try {
      expect(await fanOutEvent(deps, ev.id)).to.equal(0);
    } finally {
      await deps.close();
    }
    expect(await deliveries(wh.id)).to.have.length(1);
  });
});
