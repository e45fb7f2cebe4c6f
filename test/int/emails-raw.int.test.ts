// The development inbox (DESIGN §12): test-mode messages are composed, DKIM-signed and stored by
// the delivery worker exactly as they would be sent, and GET /emails/{id}/raw (raw_url) returns
// them; live messages are recomposed by the same code, labelled so. The demo domain never
// leaves the machine, even for a live message that reached the worker.
import { expect } from 'chai';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { insertDomain } from '../../shared/db/domains.js';
import { parseVerpAddress } from '../../shared/mail/verp.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { enqueueEmail, giveDkimKey, seedEmail, type DkimPair } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('GET /emails/{id}/raw (the development inbox)', function () {
  this.timeout(30_000);
  let api: TestApi;
  let org: SeededOrg;
  let other: SeededOrg;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  let dkim: DkimPair;
  let test: { token: string };
  let live: { token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    other = await seedOrg(api.deps.sql, { domains: [{ name: 'other.test' }] });
    dkim = await giveDkimKey(api.deps.sql, org.domains['acme.test']!.id);
    test = await org.mint({ permission: 'SEND', mode: 'test' });
    live = await org.mint({ permission: 'SEND' });
    deps = workerDepsFor(api, { DNS_SERVERS: '127.0.0.1:9' });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });
  after(async () => {
    await worker.close();
    await deps.close();
    await api.close();
  });

  const send = async (token: string, body: Record<string, unknown>) => {
    const r = await api.request('POST', '/emails', { token, body: { from: 'Acme <hello@acme.test>', ...body } });
    expect(r.status, r.text).to.equal(200);
    return r.json.id as string;
  };
  const settled = (id: string) =>
    waitFor(`email ${id} settled`, async () => {
      const r = await api.request('GET', `/emails/${id}`, { token: test.token });
      const done = r.json.recipients.every((x: { status: string }) => !['queued', 'sent'].includes(x.status));
      return done ? r.json : null;
    });
  const verify = (raw: Buffer) =>
    dkimVerify(raw, {
      resolver: async (name: string, rr: string) => {
        if (rr === 'TXT' && name === 'tern._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${dkim.publicB64}`]];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });

  it('stores a test message as it would be sent: one signed MIME, every envelope recipient noted, Bcc in none of the headers', async () => {
    const id = await send(test.token, {
      to: ['alice@dest.test'],
      cc: ['carol@dest.test'],
      bcc: ['hidden@dest.test'],
      subject: 'Inbox check',
      html: '<p>Hello <b>there</b></p>',
      attachments: [{ filename: 'note.txt', content: Buffer.from('attached').toString('base64') }],
    });
    const email = await settled(id);
    expect(email.raw_url).to.equal(`${api.deps.config.baseUrl}/api/v1/emails/${id}/raw`);
    const r = await api.request('GET', `/emails/${id}/raw`, { token: test.token });
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('message/rfc822');
    expect(r.headers.get('tern-raw-source')).to.equal('stored');
    expect(r.headers.get('tern-envelope-to')).to.equal('alice@dest.test, carol@dest.test, hidden@dest.test');
    expect(r.headers.get('tern-envelope-from'), 'shared copy: VERP differs per recipient').to.equal(null);
    const raw = Buffer.from(r.text);
    expect(r.text).to.match(new RegExp(`^Message-ID: <${id}@acme\\.test>`, 'mi'));
    expect(r.text).to.contain('Subject: Inbox check').and.to.contain('filename=note.txt');
    expect(r.text).not.to.match(/^bcc:/im);
    expect(r.text).not.to.contain('hidden@dest.test');
    const result = await verify(raw);
    expect(result.results[0]!.status.result).to.equal('pass');
    const [row] = await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from email_raw_messages where email_id = ${id} and recipient_id is null`;
    expect(row!.n).to.equal(1);

    // Asked for one recipient: the same bytes, that recipient's envelope.
    const one = await api.request('GET', `/emails/${id}/raw?recipient=HIDDEN@dest.test`, { token: test.token });
    expect(one.text).to.equal(r.text);
    expect(one.headers.get('tern-envelope-to')).to.equal('hidden@dest.test');
    const rid = parseVerpAddress(one.headers.get('tern-envelope-from')!, api.config.secretKey);
    expect(rid).to.match(/^rcp_/);
  });

  it('stores one copy per recipient when the bytes name the recipient (click tracking), and serves each', async () => {
    await api.deps.sql`update domains set track_clicks = true where id = ${org.domains['acme.test']!.id}`;
    try {
      const id = await send(test.token, {
        to: ['a@dest.test', 'b@dest.test'],
        subject: 'Tracked',
        html: '<p><a href="https://example.com/x">link</a></p>',
      });
      await settled(id);
      const a = await api.request('GET', `/emails/${id}/raw?recipient=a@dest.test`, { token: test.token });
      const b = await api.request('GET', `/emails/${id}/raw?recipient=b@dest.test`, { token: test.token });
      expect(a.headers.get('tern-raw-source')).to.equal('stored');
      expect(a.headers.get('tern-envelope-to')).to.equal('a@dest.test');
      expect(b.headers.get('tern-envelope-to')).to.equal('b@dest.test');
      expect(a.text).to.contain(`${deps.config.baseUrl}/t/`);
      expect(a.text).not.to.equal(b.text);
      const first = await api.request('GET', `/emails/${id}/raw`, { token: test.token });
      expect(first.text, 'without ?recipient: the first recipient').to.equal(a.text);
      const [row] = await api.deps.sql<{ n: number }[]>`
        select count(*)::int as n from email_raw_messages where email_id = ${id} and recipient_id is not null`;
      expect(row!.n).to.equal(2);
    } finally {
      await api.deps.sql`update domains set track_clicks = null where id = ${org.domains['acme.test']!.id}`;
    }
  });

  it('recomposes a live message with the same code, labelled recomposed', async () => {
    await worker.pause();
    try {
      const id = await send(live.token, { to: ['zed@dest.test'], subject: 'Live one', text: 'plain' });
      const r = await api.request('GET', `/emails/${id}/raw`, { token: live.token });
      expect(r.status).to.equal(200);
      expect(r.headers.get('tern-raw-source')).to.equal('recomposed');
      expect(r.headers.get('tern-envelope-to')).to.equal('zed@dest.test');
      expect(r.text).to.contain('Subject: Live one');
      expect((await verify(Buffer.from(r.text))).results[0]!.status.result).to.equal('pass');
      await api.request('POST', `/emails/${id}/cancel`, { token: live.token });
    } finally {
      await worker.resume();
    }
  });

  it('is seen exactly as GET /emails/{id}: other modes, other organizations and other domains get 404; an unknown recipient 422', async () => {
    const id = await send(test.token, { to: ['x@dest.test'], subject: 'Scoped', text: 'x' });
    await settled(id);
    expectError(await api.request('GET', `/emails/${id}/raw`, { token: live.token }), 404, 'not_found');
    const stranger = await other.mint({ permission: 'SEND', mode: 'test' });
    expectError(await api.request('GET', `/emails/${id}/raw`, { token: stranger.token }), 404, 'not_found');
    const betaOnly = await org.mint({ permission: 'SEND', mode: 'test', domains: ['beta.test'] });
    expect((await api.request('GET', `/emails/${id}/raw`, { token: betaOnly.token })).status).to.equal(404);
    expect((await api.request('GET', `/emails/${id}/raw`)).status).to.equal(401);
    const bad = await api.request('GET', `/emails/${id}/raw?recipient=nobody@dest.test`, { token: test.token });
    expect(bad.status).to.equal(422);
    expect(bad.json.error.code).to.equal('validation_error');
    expect(bad.json.error.message).to.contain('nobody@dest.test is not a recipient');
    const extra = await api.request('GET', `/emails/${id}/raw?foo=1`, { token: test.token });
    expectError(extra, 422, 'validation_error');
  });

  it('never delivers a live message of a demo domain that reached the worker: it fails naming the fix', async () => {
    const demo = await insertDomain(api.deps.sql, {
      orgId: org.organization.id,
      name: 'demo-backstop.test',
      status: 'verified',
      demo: true,
    });
    await giveDkimKey(api.deps.sql, demo.id);
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: demo.id,
      domainName: 'demo-backstop.test',
      to: ['victim@dest.test'],
    });
    await enqueueEmail(api.deps.queues, e.id);
    const rid = e.recipients['victim@dest.test']!;
    const row = await waitFor('demo live message failed', async () => {
      const [r] = await api.deps.sql<{ status: string; last_response: string | null }[]>`
        select status, last_response from email_recipients where id = ${rid}`;
      return r!.status === 'failed' ? r : null;
    });
    expect(row.last_response).to.contain('demo-backstop.test is the demo domain');
  });
});
