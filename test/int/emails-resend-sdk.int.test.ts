// The stock `resend` SDK pointed at Tern (RESEND_BASE_URL = {base_url}/api/v1) with a Tern test key.
import { expect } from 'chai';
import { Resend } from 'resend';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('Resend SDK compatibility (emails)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let resend: Resend;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const key = await org.mint({ permission: 'SEND', mode: 'test' });
    const previous = process.env.RESEND_BASE_URL;
    process.env.RESEND_BASE_URL = `${api.url}/api/v1`;
    try {
      resend = new Resend(key.token);
    } finally {
      if (previous === undefined) delete process.env.RESEND_BASE_URL;
      else process.env.RESEND_BASE_URL = previous;
    }
  });
  after(async () => api.close());

  it('emails.send → get → list → update → cancel', async () => {
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: ['delivered@example.com'],
      cc: 'cc@example.com',
      replyTo: 'support@acme.test',
      subject: 'Hello from the SDK',
      html: '<p>Hi</p>',
      text: 'Hi',
      tags: [{ name: 'source', value: 'sdk' }],
      headers: { 'X-Entity-Ref-ID': '123' },
      attachments: [{ filename: 'a.txt', content: Buffer.from('hello') }],
      scheduledAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(sent.error).to.equal(null);
    const id = sent.data!.id;
    const [row] = await api.deps.sql`select id, mode, status, reply_to from emails where id = ${id}`;
    expect(row).to.deep.include({ id, mode: 'test', status: 'scheduled', reply_to: ['support@acme.test'] });
    const [att] = await api.deps.sql`select content from email_attachments where email_id = ${id}`;
    expect(att!.content.toString()).to.equal('hello');

    const got = await resend.emails.get(id);
    expect(got.error).to.equal(null);
    expect(got.data).to.include({ object: 'email', id, subject: 'Hello from the SDK', last_event: 'scheduled' });
    expect(got.data!.to).to.deep.equal(['delivered@example.com']);

    const listed = await resend.emails.list({ limit: 10 });
    expect(listed.error).to.equal(null);
    expect(listed.data!.data.map((e) => e.id)).to.include(id);

    const at = new Date(Date.now() + 7200_000).toISOString();
    const updated = await resend.emails.update({ id, scheduledAt: at });
    expect(updated.error).to.equal(null);
    expect(updated.data).to.deep.equal({ object: 'email', id });
    const [moved] = await api.deps.sql`select scheduled_at from emails where id = ${id}`;
    expect(moved!.scheduled_at.toISOString()).to.equal(at);

    const canceled = await resend.emails.cancel(id);
    expect(canceled.error).to.equal(null);
    expect(canceled.data).to.deep.equal({ object: 'email', id });
    const [gone] = await api.deps.sql`select status from emails where id = ${id}`;
    expect(gone!.status).to.equal('canceled');
  });

  it('batch.send stores every message and returns their ids', async () => {
    const res = await resend.batch.send(
      [1, 2, 3].map((i) => ({ from: 'hello@acme.test', to: `u${i}@example.com`, subject: `n${i}`, html: '<p>x</p>' })),
      { idempotencyKey: 'sdk-batch-1' },
    );
    expect(res.error).to.equal(null);
    const ids = res.data!.data.map((d) => d.id);
    expect(ids).to.have.length(3);
    const rows = await api.deps.sql`select id from emails where id = any(${ids})`;
    expect(rows).to.have.length(3);
    const replay = await resend.batch.send(
      [1, 2, 3].map((i) => ({ from: 'hello@acme.test', to: `u${i}@example.com`, subject: `n${i}`, html: '<p>x</p>' })),
      { idempotencyKey: 'sdk-batch-1' },
    );
    expect(replay.data!.data.map((d) => d.id)).to.deep.equal(ids);
  });

  it('surfaces Tern errors as the SDK error object, with our code and message', async () => {
    const res = await resend.emails.send({ from: 'x@unknown.test', to: 'a@example.com', subject: 's', html: 'h' });
    expect(res.data).to.equal(null);
    // The SDK passes the parsed error body through unchanged: {error: {code, message}}.
    expect(res.error).to.deep.equal({
      error: {
        code: 'validation_error',
        message: 'body.from: domain unknown.test is not a domain of this organization',
      },
    });
  });
});
