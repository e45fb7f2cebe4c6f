// Delivery streams at the edges (DESIGN §14): the API's `stream` field (POST /emails and batch,
// default transactional, a bad value refused), the email object and GET /emails?stream=, the
// relay's X-Tern-Stream header (removed before storage, a bad value a 554), the job's queue band,
// broadcast-sourced messages, facet=stream in GET /metrics and the console list's column/filter.
import { expect } from 'chai';
import MailComposer from 'nodemailer/lib/mail-composer';
import { rollupPending } from '../../shared/metrics/rollup.js';
import { buildEmailRow } from '../../shared/email-row.js';
import { recordEvents } from '../../shared/events.js';
import { ConsoleClient } from '../helpers/console.js';
import { refusal, startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('streams: API, relay, metrics and console', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let key: { id: string; token: string };
  const from = 'Acme <hello@acme.test>';

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    key = await org.mint({ permission: 'SEND' });
    relay = await startRelay(api);
  });
  after(async () => {
    await relay.close();
    await api.close();
  });

  const post = async (body: Record<string, unknown>) =>
    await api.request('POST', '/emails', { token: org.key.token, body: { from, subject: 'Hi', text: 'x', ...body } });
  const streamOf = async (id: string) =>
    (await api.deps.sql<{ stream: string }[]>`select stream from emails where id = ${id}`)[0]!.stream;

  it('takes `stream` on POST /emails and the batch, transactional by default, and shows it on the email', async () => {
    const plain = await post({ to: 'a@dest.test' });
    const bulk = await post({ to: 'b@dest.test', stream: 'broadcast' });
    expect(plain.status, plain.text).to.equal(200);
    expect(bulk.status, bulk.text).to.equal(200);
    expect(await streamOf(plain.json.id)).to.equal('transactional');
    expect(await streamOf(bulk.json.id)).to.equal('broadcast');
    const shown = await api.request('GET', `/emails/${bulk.json.id}`, { token: org.key.token });
    expect(shown.json.stream).to.equal('broadcast');

    const batch = await api.request('POST', '/emails/batch', {
      token: org.key.token,
      body: [
        { from, to: 'c@dest.test', subject: 'a', text: 'x', stream: 'broadcast' },
        { from, to: 'd@dest.test', subject: 'b', text: 'x' },
      ],
    });
    expect(batch.status, batch.text).to.equal(200);
    const [c, d] = batch.json.data.map((x: { id: string }) => x.id);
    expect([await streamOf(c), await streamOf(d)]).to.deep.equal(['broadcast', 'transactional']);

    // Each job sits in its stream's queue, the org's first waiting job of that stream (priority 1).
    const queues = api.deps.queues;
    const [plainJob, bulkJob] = await Promise.all([
      queues.delivery.getJob(plain.json.id),
      queues['delivery-broadcast'].getJob(bulk.json.id),
    ]);
    expect(await queues['delivery-broadcast'].getJob(plain.json.id)).to.equal(undefined);
    expect(await queues.delivery.getJob(bulk.json.id)).to.equal(undefined);
    expect(plainJob!.data).to.deep.include({ stream: 'transactional', orgId: org.organization.id });
    expect(bulkJob!.data).to.deep.include({ stream: 'broadcast', orgId: org.organization.id });
    expect(bulkJob!.opts.priority).to.equal(1);
  });

  it('refuses an unknown stream with a validation error naming the field', async () => {
    const res = await post({ to: 'a@dest.test', stream: 'marketing' });
    expectError(res, 422, 'validation_error');
    expect(res.json.error.message).to.match(/stream/);
    const batch = await api.request('POST', '/emails/batch', {
      token: org.key.token,
      body: [{ from, to: 'c@dest.test', subject: 'a', text: 'x', stream: 'bulk' }],
    });
    expectError(batch, 422, 'validation_error');
  });

  it('filters GET /emails by stream', async () => {
    const t = (await post({ to: 'f1@dest.test' })).json.id as string;
    const b = (await post({ to: 'f2@dest.test', stream: 'broadcast' })).json.id as string;
    const list = async (q: string) =>
      (await api.request('GET', `/emails?limit=100${q}`, { token: org.key.token })).json.data as {
        id: string;
        stream: string;
      }[];
    const broadcast = await list('&stream=broadcast');
    expect(broadcast.map((e) => e.id))
      .to.include(b)
      .and.not.include(t);
    expect(broadcast.every((e) => e.stream === 'broadcast')).to.equal(true);
    const transactional = await list('&stream=transactional');
    expect(transactional.map((e) => e.id))
      .to.include(t)
      .and.not.include(b);
    expectError(await api.request('GET', '/emails?stream=other', { token: org.key.token }), 422, 'validation_error');
  });

  it('takes X-Tern-Stream on the relay, removes it, and refuses a bad value with a 554', async () => {
    const raw = await new MailComposer({
      from,
      to: 'r@dest.test',
      subject: 'Relay',
      text: 'x',
      headers: { 'X-Tern-Stream': 'broadcast' },
    })
      .compile()
      .build();
    const info = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['r@dest.test'] },
      raw,
    });
    const id = /queued as (em_\w+)/.exec(String(info.response))![1]!;
    const [e] = await api.deps.sql<{ stream: string; raw_mime: Buffer }[]>`
      select stream, raw_mime from emails where id = ${id}`;
    expect(e!.stream).to.equal('broadcast');
    expect(e!.raw_mime.toString('latin1')).to.not.match(/x-tern-stream/i);

    const plain = await new MailComposer({ from, to: 'r@dest.test', subject: 'Relay', text: 'x' }).compile().build();
    const info2 = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['r@dest.test'] },
      raw: plain,
    });
    expect(await streamOf(/queued as (em_\w+)/.exec(String(info2.response))![1]!)).to.equal('transactional');

    const bad = await new MailComposer({
      from,
      to: 'r@dest.test',
      subject: 'Relay',
      text: 'x',
      headers: { 'X-Tern-Stream': 'bulk' },
    })
      .compile()
      .build();
    const refused = await refusal(
      relay
        .transport(key.id, key.token)
        .sendMail({ envelope: { from: 'hello@acme.test', to: ['r@dest.test'] }, raw: bad }),
    );
    expect(refused.code).to.equal(554);
    expect(refused.response).to.match(/X-Tern-Stream must be one of transactional, broadcast/);
  });

  it('gives broadcast and automation messages the broadcast stream by default', () => {
    const base = {
      id: 'em_x',
      orgId: 'org_x',
      keyId: null,
      mode: 'live' as const,
      domain: { id: 'dom_x', name: 'acme.test' },
      from: { address: from, email: 'hello@acme.test' },
      to: ['a@dest.test'],
      subject: 's',
      html: null,
      text: 'x',
    };
    expect(buildEmailRow({ ...base, source: 'broadcast' }).stream).to.equal('broadcast');
    expect(buildEmailRow({ ...base, source: 'automation' }).stream).to.equal('broadcast');
    expect(buildEmailRow({ ...base, source: 'smtp' }).stream).to.equal('transactional');
    expect(buildEmailRow({ ...base, source: 'broadcast', stream: 'transactional' }).stream).to.equal('transactional');
  });

  it('breaks GET /metrics down by stream (facet=stream), from the messages’ own streams', async () => {
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'metrics.test' }] });
    const send = async (stream: string, to: string) =>
      (
        await api.request('POST', '/emails', {
          token: other.key.token,
          body: { from: 'M <m@metrics.test>', to, subject: 's', text: 'x', stream },
        })
      ).json.id as string;
    const ids = {
      t1: await send('transactional', 'a@dest.test'),
      t2: await send('transactional', 'b@dest.test'),
      b1: await send('broadcast', 'c@dest.test'),
    };
    const domainId = other.domains['metrics.test']!.id;
    await recordEvents(
      api.deps.sql,
      Object.entries(ids).map(([name, emailId]) => ({
        orgId: other.organization.id,
        mode: 'live' as const,
        type: 'email.sent' as const,
        dedupeKey: `${emailId}:sent:${name}`,
        emailId,
        domainId,
      })),
    );
    while ((await rollupPending(api.deps.sql, 1000)).claimed > 0);
    const res = await api.request('GET', '/metrics?days=1&facet=stream', { token: other.key.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.facet).to.equal('stream');
    const by = new Map((res.json.by as { key: string; label: string; sent: number }[]).map((r) => [r.key, r]));
    expect(by.get('transactional')).to.deep.include({ label: 'transactional', sent: 2 });
    expect(by.get('broadcast')).to.deep.include({ label: 'broadcast', sent: 1 });
  });

  it('shows the stream on the console’s email list and filters by it', async () => {
    const t = (await post({ to: 'console-t@dest.test', subject: 'Console T' })).json.id as string;
    const b = (await post({ to: 'console-b@dest.test', subject: 'Console B', stream: 'broadcast' })).json.id as string;
    const browser = new ConsoleClient(api.url);
    expect((await browser.login(org.user.email, org.user.password)).status).to.equal(303);
    const page = await browser.get('/console/emails');
    expect(page.status).to.equal(200);
    const cell = (id: string) => new RegExp(`data-email-id="${id}"[\\s\\S]*?data-stream="(\\w+)"`).exec(page.text)?.[1];
    expect(cell(t)).to.equal('transactional');
    expect(cell(b)).to.equal('broadcast');
    const filtered = await browser.get('/console/emails?stream=broadcast');
    expect(filtered.text).to.contain(b).and.not.contain(t);
    const bad = await browser.get('/console/emails?stream=bulk');
    expect(bad.text).to.contain('Stream &#34;bulk&#34; is unknown; left out');
  });
});
