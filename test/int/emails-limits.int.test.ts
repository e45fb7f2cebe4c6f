// The sending routes at their limits (issue 11 item 1, issue 17 item 3): a POST /emails/batch of
// 100 items each at every maximum (150 recipients of 512 characters, 50 headers, 50 tags,
// attachments, a schedule) and a POST /emails at every maximum are stored whole; batch items
// carry attachments into their MIME and scheduled items are rescheduled and canceled as single
// sends are.
import { expect } from 'chai';
import { BATCH_ITEM, MAX_BATCH } from '../../api/schemas/emails.js';
import { maxBatchItem, maxSendBody } from '../helpers/max-email.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('sending routes at their limits', function () {
  this.timeout(300_000);
  let api: TestApi;
  let org: SeededOrg;
  let send: { id: string; token: string };
  let topicId: string;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
    const admin = await org.mint({ permission: 'ADMIN' });
    const topic = await api.request('POST', '/topics', {
      token: admin.token,
      body: { name: 'News', default_subscription: 'opt_in' },
    });
    expect(topic.status).to.equal(201);
    topicId = topic.json.id;
  });
  after(async () => api.close());

  const batch = (body: unknown, token = send.token) => api.request('POST', '/emails/batch', { token, body });
  const item = (i: number, extra: object = {}) => ({
    from: 'hi@acme.test',
    to: [`u${i}@example.com`],
    subject: `n${i}`,
    text: 'x',
    ...extra,
  });

  it('stores 100 items at every maximum: 15,000 recipients, attachments, headers, tags, schedules', async () => {
    const at = new Date(Date.now() + 2 * 86_400_000);
    const items = Array.from({ length: MAX_BATCH }, (_, i) =>
      maxBatchItem({ domain: 'acme.test', topicId, tag: `m${String(i).padStart(3, '0')}`, scheduledAt: at }),
    );
    const res = await batch(items);
    expect(res.status, res.text.slice(0, 500)).to.equal(200);
    const ids: string[] = res.json.data.map((d: { id: string }) => d.id);
    expect(ids).to.have.length(MAX_BATCH);

    const sql = api.deps.sql;
    const [emails] = await sql<{ n: number; scheduled: number; tags: number; headers: number; topics: number }[]>`
      select count(*)::int as n, count(*) filter (where status = 'scheduled' and scheduled_at = ${at})::int as scheduled,
             min(jsonb_array_length(tags))::int as tags,
             min((select count(*) from jsonb_object_keys(headers)))::int as headers,
             count(*) filter (where topic_id = ${topicId})::int as topics
      from emails where id = any(${ids})`;
    expect(emails).to.deep.equal({ n: 100, scheduled: 100, tags: 50, headers: 50, topics: 100 });
    const [rcpt] = await sql<{ n: number; fields: string[] }[]>`
      select count(*)::int as n, array_agg(distinct field order by field) as fields
      from email_recipients where email_id = any(${ids}) and status = 'scheduled'`;
    expect(rcpt).to.deep.equal({ n: 15_000, fields: ['bcc', 'cc', 'to'] });
    const [att] = await sql<{ n: number; bytes: number }[]>`
      select count(*)::int as n, sum(size)::int as bytes from email_attachments where email_id = any(${ids})`;
    expect(att).to.deep.equal({ n: 100 * BATCH_ITEM.attachments, bytes: 100 * BATCH_ITEM.attachmentBytes });

    // Byte for byte: the first attachment of the last item, and its address lists in order.
    const [one] = await sql<{ content: Buffer; filename: string }[]>`
      select content, filename from email_attachments where email_id = ${ids[99]!} and position = 0`;
    expect(one!.filename).to.equal(items[99]!.attachments[0]!.filename);
    expect(one!.content.equals(Buffer.from(items[99]!.attachments[0]!.content, 'base64'))).to.equal(true);
    const [row] = await sql<{ to_addresses: string[]; reply_to: string[]; subject: string }[]>`
      select to_addresses, reply_to, subject from emails where id = ${ids[99]!}`;
    expect(row!.to_addresses).to.have.length(50);
    // Stored as formatted (a display name without specials loses its quotes).
    expect(row!.to_addresses[7]).to.equal(items[99]!.to[7]!.replace(/"/g, ''));
    expect(row!.reply_to[49]).to.equal(items[99]!.reply_to[49]!.replace(/"/g, ''));
    expect(row!.subject).to.equal(items[99]!.subject);

    // Each item is a scheduled single send: its delayed job has the email id.
    const job = await api.deps.queues.delivery.getJob(ids[42]!);
    expect(await job?.isDelayed()).to.equal(true);
  });

  it('POST /emails at every maximum: 40 MB of attachments, 5 MB each of html and text', async () => {
    const body = maxSendBody({
      domain: 'acme.test',
      topicId,
      tag: 'single',
      scheduledAt: new Date(Date.now() + 3600_000),
    });
    const res = await api.request('POST', '/emails', { token: send.token, body });
    expect(res.status, res.text.slice(0, 500)).to.equal(200);
    const [row] = await api.deps.sql<{ n: number; bytes: number; recipients: number; html: number }[]>`
      select (select count(*)::int from email_attachments where email_id = e.id) as n,
             (select sum(size)::int from email_attachments where email_id = e.id) as bytes,
             (select count(*)::int from email_recipients where email_id = e.id) as recipients,
             length(e.html) as html
      from emails e where e.id = ${res.json.id}`;
    expect(row).to.deep.equal({ n: 100, bytes: 40 * 1024 * 1024, recipients: 150, html: 5 * 1024 * 1024 });
  });

  it('puts an item’s attachments into its MIME', async () => {
    const test = await org.mint({ permission: 'SEND', mode: 'test' });
    const pdf = Buffer.from('%PDF-1.4 batch attachment');
    const res = await batch(
      [item(1, { attachments: [{ filename: 'invoice-1.pdf', content: pdf.toString('base64') }] }), item(2)],
      test.token,
    );
    expect(res.status).to.equal(200);
    const raw = await api.request('GET', `/emails/${res.json.data[0].id}/raw`, { token: test.token });
    expect(raw.status).to.equal(200);
    expect(raw.text).to.contain('filename=invoice-1.pdf');
    expect(raw.text).to.contain(pdf.toString('base64'));
  });

  it('scheduled items are rescheduled and canceled like single sends', async () => {
    const res = await batch([item(1, { scheduled_at: 'in 1 hour' }), item(2, { scheduled_at: 'in 1 hour' }), item(3)]);
    expect(res.status).to.equal(200);
    const [a, b, c] = res.json.data.map((d: { id: string }) => d.id) as string[];
    const queue = api.deps.queues.delivery;
    expect(await (await queue.getJob(a!))!.isDelayed()).to.equal(true);
    expect(await (await queue.getJob(c!))!.isDelayed()).to.equal(false);

    const later = new Date(Date.now() + 3 * 3600_000);
    const patched = await api.request('PATCH', `/emails/${a}`, {
      token: send.token,
      body: { scheduled_at: later.toISOString() },
    });
    expect(patched.status).to.equal(200);
    const moved = await queue.getJob(a!);
    expect(moved!.timestamp + moved!.delay).to.be.closeTo(later.getTime(), 5_000);
    const shown = await api.request('GET', `/emails/${a}`, { token: send.token });
    expect(shown.json.scheduled_at).to.equal(later.toISOString());

    const canceled = await api.request('POST', `/emails/${b}/cancel`, { token: send.token });
    expect(canceled.status).to.equal(200);
    expect(await queue.getJob(b!)).to.equal(undefined);
    const [row] = await api.deps.sql<{ status: string }[]>`select status from emails where id = ${b!}`;
    expect(row!.status).to.equal('canceled');

    // The unscheduled item is queued and can no longer be rescheduled.
    const refused = await api.request('PATCH', `/emails/${c}`, {
      token: send.token,
      body: { scheduled_at: later.toISOString() },
    });
    expect(refused.status).to.equal(409);
    expect(refused.json.error.code).to.equal('invalid_state');
  });

  it('refuses an item over the batch limits, naming its index, and stores nothing', async () => {
    const [before] = await api.deps.sql<{ n: number }[]>`select count(*)::int as n from emails`;
    const half = Buffer.alloc(300 * 1024, 7).toString('base64');
    const heavy = await batch([
      item(1),
      item(2, {
        attachments: [
          { filename: 'a.bin', content: half },
          { filename: 'b.bin', content: half },
        ],
      }),
    ]);
    expect(heavy.status).to.equal(422);
    expect(heavy.json.error.code).to.equal('validation_error');
    expect(heavy.json.error.message).to.equal('body[1].attachments total size exceeds 512 KB');

    const long = await batch([item(1, { html: 'x'.repeat(BATCH_ITEM.contentChars + 1) })]);
    expect(long.status).to.equal(422);
    expect(long.json.error.code).to.equal('validation_error');
    expect(long.json.error.message).to.match(/^body\[0\]\.html must NOT have more than 131072 characters/);

    const many = await batch([
      item(1, { attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `f${i}`, content: 'AAAA' })) }),
    ]);
    expect(many.status).to.equal(422);
    expect(many.json.error.message).to.match(/^body\[0\]\.attachments must NOT have more than 10 items/);
    const [after] = await api.deps.sql<{ n: number }[]>`select count(*)::int as n from emails`;
    expect(after!.n).to.equal(before!.n);
  });
});
