import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const HTML = '<p>Hello</p>';

describe('POST /emails', () => {
  let api: TestApi;
  let org: SeededOrg;
  let send: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, {
      domains: [{ name: 'acme.test' }, { name: 'beta.test' }, { name: 'pending.test', verified: false }],
    });
    await unthrottle(api, org.organization.id);
    send = await org.mint({ permission: 'SEND' });
  });
  after(async () => api.close());

  const post = (body: unknown, token = send.token, headers: Record<string, string> = {}) =>
    api.request('POST', '/emails', { token, body, headers });

  const base = { from: 'Acme <hello@acme.test>', to: 'a@example.com', subject: 'Hi', html: HTML };

  it('stores the message, one recipient per unique address per field, and enqueues a job', async () => {
    const res = await post({
      ...base,
      from: '"Acme, Inc." <Hello@ACME.test>',
      to: ['Ann <ann@example.com>', 'bob@example.com', 'ANN@example.com'],
      cc: 'bob@example.com',
      bcc: ['Carl <carl@example.org>'],
      reply_to: 'support@acme.test',
      text: 'Hello',
      headers: { 'X-Campaign': 'spring', 'In-Reply-To': '<x@y.z>' },
      tags: [{ name: 'category', value: 'welcome' }],
      kind: 'receipt',
    });
    expect(res.status).to.equal(200);
    expect(Object.keys(res.json)).to.deep.equal(['id']);
    const id = res.json.id as string;
    expect(id).to.match(/^em_[0-9A-Z]{26}$/);
    const [email] = await api.deps.sql`select * from emails where id = ${id}`;
    expect(email).to.include({
      org_id: org.organization.id,
      key_id: send.id,
      domain_id: org.domains['acme.test']!.id,
      mode: 'live',
      from_email: 'hello@acme.test',
      from_address: '"Acme, Inc." <Hello@acme.test>',
      subject: 'Hi',
      kind: 'receipt',
      status: 'queued',
      message_id: `${id}@acme.test`,
    });
    expect(email!.reply_to).to.deep.equal(['support@acme.test']);
    expect(email!.headers).to.deep.equal({ 'X-Campaign': 'spring', 'In-Reply-To': '<x@y.z>' });
    expect(email!.tags).to.deep.equal([{ name: 'category', value: 'welcome' }]);
    const rcpts = await api.deps.sql`
      select field, address, email, domain, status from email_recipients where email_id = ${id} order by id`;
    expect(rcpts.map((r) => [r.field, r.email, r.status])).to.deep.equal([
      ['to', 'ann@example.com', 'queued'],
      ['to', 'bob@example.com', 'queued'],
      ['bcc', 'carl@example.org', 'queued'],
    ]);
    expect(rcpts[0]!.address).to.equal('Ann <ann@example.com>');
    const job = await api.deps.queues.delivery.getJob(id);
    expect(job?.data).to.deep.include({ emailId: id, stream: 'transactional' });
    expect(await job!.isDelayed()).to.equal(false);
  });

  it('stores attachments decoded', async () => {
    const content = Buffer.from('%PDF-1.4 fake');
    const res = await post({
      ...base,
      attachments: [
        { filename: 'a.pdf', content: content.toString('base64'), content_type: 'application/pdf' },
        { filename: 'logo.png', content: 'iVBORw0KGgo=', content_id: 'logo' },
      ],
    });
    expect(res.status).to.equal(200);
    const rows = await api.deps.sql`
      select * from email_attachments where email_id = ${res.json.id} order by position`;
    expect(rows).to.have.length(2);
    expect(Buffer.compare(rows[0]!.content, content)).to.equal(0);
    expect(rows[0]).to.include({ filename: 'a.pdf', content_type: 'application/pdf', size: content.length });
    expect(rows[1]).to.include({ content_id: 'logo', size: 8 });
  });

  it('schedules: status scheduled, wait_reason, delayed job', async () => {
    const at = new Date(Date.now() + 3600_000);
    const res = await post({ ...base, scheduled_at: at.toISOString() });
    expect(res.status).to.equal(200);
    const [email] = await api.deps.sql`select status, scheduled_at from emails where id = ${res.json.id}`;
    expect(email!.status).to.equal('scheduled');
    expect(email!.scheduled_at.toISOString()).to.equal(at.toISOString());
    const [r] = await api.deps.sql`select status, wait_reason from email_recipients where email_id = ${res.json.id}`;
    expect(r).to.deep.equal({ status: 'scheduled', wait_reason: `scheduled for ${at.toISOString()}` });
    const job = await api.deps.queues.delivery.getJob(res.json.id);
    expect(await job!.isDelayed()).to.equal(true);
    expect(job!.delay).to.be.within(3500_000, 3600_000);
  });

  it('accepts Resend-style relative schedules ("in 10 min")', async () => {
    const res = await post({ ...base, scheduled_at: 'in 10 min' });
    expect(res.status).to.equal(200);
    const [email] = await api.deps.sql`select scheduled_at from emails where id = ${res.json.id}`;
    const ahead = email!.scheduled_at.getTime() - Date.now();
    expect(ahead).to.be.within(9 * 60_000, 10 * 60_000);
  });

  describe('validation (422 validation_error naming the field)', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['missing to', { ...base, to: undefined }, 'body.to is required'],
      ['empty to array', { ...base, to: [] }, 'body.to'],
      ['to of wrong type', { ...base, to: 42 }, 'body.to must be a string or an array'],
      ['bad address', { ...base, to: 'not-an-address' }, 'body.to'],
      ['bad address in a list', { ...base, to: ['a@b.test', 'x@@y'] }, 'body.to[1]'],
      ['bad domain', { ...base, cc: 'a@exa_mple.com' }, 'body.cc'],
      ['unquoted special display name', { ...base, to: 'Doe, John <j@example.com>' }, 'body.to'],
      ['unbalanced brackets', { ...base, to: 'John <j@example.com' }, 'body.to'],
      ['CRLF in address', { ...base, to: 'j@example.com\r\nBcc: x@y.z' }, 'body.to'],
      ['51 to', { ...base, to: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) }, 'at most 50'],
      ['51 bcc', { ...base, bcc: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) }, 'body.bcc'],
      ['bad from', { ...base, from: 'Acme' }, 'body.from'],
      ['no content', { from: base.from, to: base.to, subject: 'x' }, 'body.html or body.text'],
      ['no subject', { from: base.from, to: base.to, html: HTML }, 'body.subject is required'],
      ['template with html', { ...base, template: { id: 'tpl_x' } }, 'body.template'],
      ['tag charset', { ...base, tags: [{ name: 'bad tag', value: 'x' }] }, 'body.tags.0.name'],
      ['tag value too long', { ...base, tags: [{ name: 'a', value: 'x'.repeat(257) }] }, 'body.tags.0.value'],
      ['tag without value', { ...base, tags: [{ name: 'a' }] }, 'body.tags.0.value is required'],
      ['kind too long', { ...base, kind: 'k'.repeat(65) }, 'body.kind'],
      ['header value not a string', { ...base, headers: { 'X-A': 1 } }, 'body.headers'],
      ['header with CRLF', { ...base, headers: { 'X-A': 'a\r\nBcc: x@y.z' } }, 'body.headers.X-A'],
      ['reserved header', { ...base, headers: { 'Message-ID': '<a@b>' } }, 'body.headers.Message-ID'],
      ['bad base64', { ...base, attachments: [{ filename: 'a', content: 'no*base64' }] }, 'attachments[0].content'],
      ['attachment without filename', { ...base, attachments: [{ content: 'AAAA' }] }, 'filename is required'],
      ['schedule in the past', { ...base, scheduled_at: '2020-01-01T00:00:00Z' }, 'must be in the future'],
      [
        'schedule beyond 30 days',
        { ...base, scheduled_at: new Date(Date.now() + 31 * 86400_000).toISOString() },
        'at most 30 days',
      ],
      ['schedule not a date', { ...base, scheduled_at: 'tomorrow-ish' }, 'body.scheduled_at'],
      ['schedule without zone', { ...base, scheduled_at: '2099-01-01T00:00:00' }, 'body.scheduled_at'],
      ['unknown field', { ...base, bogus: 1 }, 'body.bogus is not a known field'],
      ['subject of wrong type', { ...base, subject: 7 }, 'body.subject'],
      ['domain of another org', { ...base, from: 'x@elsewhere.test' }, 'not a domain of this organization'],
      ['unverified domain', { ...base, from: 'x@pending.test' }, 'domain pending.test is not verified'],
    ];
    for (const [name, body, message] of cases) {
      it(name, async () => {
        const res = await post(body);
        expect(res.status, res.text).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message).to.contain(message);
      });
    }

    it('refuses more than 40 MB of attachments', async () => {
      const big = Buffer.alloc(20.5 * 1024 * 1024, 1).toString('base64');
      const res = await post({
        ...base,
        attachments: [
          { filename: 'a.bin', content: big },
          { filename: 'b.bin', content: big },
        ],
      });
      expectError(res, 422, 'validation_error');
      expect(res.json.error.message).to.contain('40 MB');
    });

    it('stores nothing for a refused message', async () => {
      const [before] = await api.deps.sql`select count(*)::int as n from emails`;
      await post({ ...base, to: 'bad' });
      const [after] = await api.deps.sql`select count(*)::int as n from emails`;
      expect(after!.n).to.equal(before!.n);
    });
  });

  it('answers 413 for a body over the route limit and 400 for malformed JSON', async () => {
    const huge = await api.request('POST', '/emails', {
      token: send.token,
      raw: Buffer.alloc(72 * 1024 * 1024 + 1, 0x20),
      headers: { 'content-type': 'application/json' },
    });
    expect(huge.status).to.equal(413);
    expect(huge.json.error.code).to.equal('payload_too_large');
    const bad = await api.request('POST', '/emails', {
      token: send.token,
      raw: '{"from":',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.code).to.equal('invalid_json');
  });

  it('gives a restricted key 403 forbidden_domain outside its domains', async () => {
    const k = await org.mint({ permission: 'SEND', domains: ['beta.test'] });
    const res = await post(base, k.token);
    expect(res.status).to.equal(403);
    expect(res.json.error.code).to.equal('forbidden_domain');
    const ok = await post({ ...base, from: 'hi@beta.test' }, k.token);
    expect(ok.status).to.equal(200);
  });

  it('stores test-key messages with mode test and enqueues them', async () => {
    const t = await org.mint({ permission: 'SEND', mode: 'test' });
    const res = await post({ ...base, to: 'bounced@example.com' }, t.token);
    expect(res.status).to.equal(200);
    const [email] = await api.deps.sql`select mode, status from emails where id = ${res.json.id}`;
    expect(email).to.deep.equal({ mode: 'test', status: 'queued' });
    expect(await api.deps.queues.delivery.getJob(res.json.id)).to.not.equal(undefined);
    const bad = await post({ ...base, from: 'x@pending.test' }, t.token);
    expectError(bad, 422, 'validation_error');
  });

  it('sends a published template: rendered content, template recorded, missing variable 422', async () => {
    const created = await api.request('POST', '/templates', {
      token: send.token,
      body: {
        name: 'Welcome',
        slug: 'welcome',
        subject: 'Hi {{name}}',
        html: '<p>Hello {{name}}</p>',
        text: 'Hello {{name}}',
        from: 'Acme <hello@acme.test>',
        variables: [{ key: 'name', type: 'string' }],
      },
    });
    expect(created.status, created.text).to.equal(201);
    const tplId = created.json.id as string;
    expect((await api.request('POST', `/templates/${tplId}/publish`, { token: send.token })).status).to.equal(200);
    const res = await post({ to: 'a@example.com', template: { id: 'welcome', variables: { name: '<Ann>' } } });
    expect(res.status, res.text).to.equal(200);
    const [email] = await api.deps.sql`select * from emails where id = ${res.json.id}`;
    expect(email).to.include({
      subject: 'Hi <Ann>',
      html: '<p>Hello &lt;Ann&gt;</p>',
      text: 'Hello <Ann>',
      from_email: 'hello@acme.test',
      template_id: tplId,
      template_slug: 'welcome',
      template_version: 1,
    });
    const got = await api.request('GET', `/emails/${res.json.id}`, { token: send.token });
    expect(got.json.template).to.deep.equal({ id: tplId, slug: 'welcome', version: 1 });
    const missing = await post({ to: 'a@example.com', template: { id: 'welcome' } });
    expectError(missing, 422, 'validation_error');
    expect(missing.json.error.message).to.contain('name');
    const unknown = await post({ to: 'a@example.com', template: { id: 'nope' } });
    expectError(unknown, 422, 'validation_error');
    expect(unknown.json.error.message).to.contain('body.template');
  });

  it('answers 200 and keeps the row when the enqueue fails after commit', async () => {
    const queue = api.deps.queues.delivery;
    const original = queue.add.bind(queue);
    queue.add = (() => Promise.reject(new Error('Connection is closed.'))) as typeof queue.add;
    try {
      const res = await post(base);
      expect(res.status).to.equal(200);
      const [email] = await api.deps.sql`select status from emails where id = ${res.json.id}`;
      expect(email!.status).to.equal('queued');
      expect(await queue.getJob(res.json.id)).to.equal(undefined);
    } finally {
      queue.add = original;
    }
  });
});
