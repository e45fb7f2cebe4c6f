import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

const run = promisify(execFile);

interface StoredEmail {
  source: string;
  mode: string;
  raw_mime: Buffer | null;
  message_id: string;
  from_address: string;
  to_addresses: string[];
  cc_addresses: string[];
  bcc_addresses: string[];
  subject: string;
  html: string | null;
  text: string | null;
  tags: { name: string; value: string }[];
  kind: string | null;
  status: string;
}

async function compose(opts: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return await new MailComposer(opts).compile().build();
}

function queuedId(response: string | undefined): string {
  const m = /^250 2\.0\.0 Ok: queued as (em_[0-9A-Z]{26})$/.exec(response ?? '');
  if (!m) throw new Error(`unexpected reply ${response}`);
  return m[1]!;
}

describe('SMTP relay: what is stored', () => {
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let key: { id: string; token: string };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    relay = await startRelay(api);
    key = await org.mint({ permission: 'SEND' });
  });
  after(async () => {
    await relay.close();
    await api.close();
  });

  const stored = async (id: string) => (await api.deps.sql<StoredEmail[]>`select * from emails where id = ${id}`)[0]!;
  const recipients = async (id: string) =>
    await api.deps.sql<{ field: string; email: string; status: string }[]>`
      select field, email, status from email_recipients where email_id = ${id} order by email`;

  it('stores the raw bytes as the client wrote them, minus the X-Tern-* header lines (attachments, inline image)', async () => {
    const pdf = randomBytes(20_000);
    const png = randomBytes(3_000);
    const expected = await compose({
      from: 'Acme Billing <billing@acme.test>',
      to: 'Alice <alice@dest.test>',
      cc: 'carol@dest.test',
      subject: 'Your receipt ✓ — a subject long enough to be folded over more than one header line by the composer',
      messageId: '<client-123@acme.test>',
      headers: { 'X-Custom-Trace': 'abc 123', 'List-Id': '<receipts.acme.test>' },
      text: 'Thanks!\r\n.\r\nA line with a single dot above (dot-stuffing).',
      html: '<p>Thanks!</p><img src="cid:logo@acme">',
      attachments: [
        { filename: 'receipt.pdf', content: pdf, contentType: 'application/pdf' },
        { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@acme' },
      ],
    });
    const text = expected.toString('latin1');
    const subjectAt = text.indexOf('\r\nSubject:') + 2;
    const sent = Buffer.concat([
      Buffer.from('X-Tern-Tags: plan=pro,\r\n\tregion=eu\r\n'),
      expected.subarray(0, subjectAt),
      Buffer.from('x-tern-kind:  receipt \r\n'),
      expected.subarray(subjectAt),
    ]);
    const info = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'billing@acme.test', to: ['alice@dest.test', 'carol@dest.test', 'bob@hidden.test'] },
      raw: sent,
    });
    const id = queuedId(info.response);
    const e = await stored(id);
    expect(Buffer.compare(e.raw_mime!, expected)).to.equal(0, 'raw_mime differs from the message sent');
    expect(e).to.deep.include({
      source: 'smtp',
      mode: 'live',
      status: 'queued',
      message_id: 'client-123@acme.test',
      from_address: 'Acme Billing <billing@acme.test>',
      to_addresses: ['Alice <alice@dest.test>'],
      cc_addresses: ['carol@dest.test'],
      bcc_addresses: ['bob@hidden.test'],
      kind: 'receipt',
    });
    expect(e.subject).to.match(/^Your receipt ✓ — a subject long enough/);
    expect(e.tags).to.deep.equal([
      { name: 'plan', value: 'pro' },
      { name: 'region', value: 'eu' },
    ]);
    expect(e.html).to.contain('cid:logo@acme');
    expect(await recipients(id)).to.deep.equal([
      { field: 'to', email: 'alice@dest.test', status: 'queued' },
      { field: 'bcc', email: 'bob@hidden.test', status: 'queued' },
      { field: 'cc', email: 'carol@dest.test', status: 'queued' },
    ]);
    const job = await api.deps.queues.delivery.getJob(id);
    expect(job?.data).to.deep.include({ emailId: id, stream: 'transactional' });
    // The stored message still parses to the same attachments, byte for byte.
    const parsed = await simpleParser(e.raw_mime!);
    const files = parsed.attachments.map((a) => [
      a.filename,
      a.cid ?? null,
      a.content.equals(a.filename === 'logo.png' ? png : pdf),
    ]);
    expect(files.sort()).to.deep.equal([
      ['logo.png', 'logo@acme', true],
      ['receipt.pdf', null, true],
    ]);
  });

  it('sends through nodemailer’s own composer too: tags and kind from headers, stripped, attachments kept', async () => {
    const info = await relay.transport(key.id, key.token).sendMail({
      from: 'hello@acme.test',
      to: ['x@dest.test'],
      bcc: ['y@dest.test'],
      subject: 'Hello',
      html: '<b>Hi</b>',
      headers: { 'X-Tern-Tags': 'campaign=spring', 'X-Tern-Kind': 'newsletter', 'X-Tern-Unknown': 'dropped too' },
      attachments: [{ filename: 'a.txt', content: 'attached' }],
    });
    const e = await stored(queuedId(info.response));
    expect(e.raw_mime!.toString('latin1')).not.to.match(/^x-tern-/im);
    expect(e.tags).to.deep.equal([{ name: 'campaign', value: 'spring' }]);
    expect(e.kind).to.equal('newsletter');
    expect(e.to_addresses).to.deep.equal(['x@dest.test']);
    expect(e.bcc_addresses).to.deep.equal(['y@dest.test']);
    const parsed = await simpleParser(e.raw_mime!);
    expect(parsed.attachments.map((a) => a.content.toString())).to.deep.equal(['attached']);
  });

  it('names the message <email_id>@<from domain> when the client gave no Message-ID, and records a test key as test', async () => {
    const testKey = await org.mint({ permission: 'SEND', mode: 'test' });
    const raw = Buffer.from('From: hello@acme.test\r\nTo: a@dest.test\r\nSubject: plain\r\n\r\nbody\r\n');
    const info = await relay.transport(testKey.id, testKey.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['a@dest.test'] },
      raw,
    });
    const id = queuedId(info.response);
    const e = await stored(id);
    expect(e.message_id).to.equal(`${id}@acme.test`);
    expect(e.mode).to.equal('test');
    expect(e.tags).to.deep.equal([]);
    expect(e.kind).to.equal(null);
    expect(Buffer.compare(e.raw_mime!, raw)).to.equal(0);
  });

  it('removes a Bcc header the client wrote (it would reveal the blind copies), and nothing else', async () => {
    const raw =
      'From: hello@acme.test\r\nTo: a@dest.test\r\nBcc: secret@dest.test,\r\n other@dest.test\r\nSubject: s\r\n\r\nBcc: body text stays\r\n';
    const info = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['a@dest.test', 'secret@dest.test', 'other@dest.test'] },
      raw: Buffer.from(raw),
    });
    const e = await stored(queuedId(info.response));
    expect(e.raw_mime!.toString()).to.equal(
      'From: hello@acme.test\r\nTo: a@dest.test\r\nSubject: s\r\n\r\nBcc: body text stays\r\n',
    );
    expect(e.bcc_addresses).to.deep.equal(['secret@dest.test', 'other@dest.test']);
  });

  it('accepts a message from swaks (Debian package), over STARTTLS with AUTH LOGIN', async function () {
    try {
      await run('swaks', ['--version']);
    } catch {
      this.skip(); // swaks is not installed here (apt-get install swaks); the nodemailer cases cover the relay
    }
    const { stdout } = await run('swaks', [
      '--server',
      `127.0.0.1:${relay.port}`,
      '--tls',
      '--auth',
      'LOGIN',
      '--auth-user',
      key.id,
      '--auth-password',
      key.token,
      '--from',
      'hello@acme.test',
      '--to',
      'swaks@dest.test',
      '--header',
      'From: hello@acme.test',
      '--header',
      'X-Tern-Kind: swaks',
      '--header',
      'Subject: from swaks',
      '--body',
      'sent by swaks',
    ]);
    const m = /<~ +250 2\.0\.0 Ok: queued as (em_[0-9A-Z]{26})/.exec(stdout);
    expect(m, stdout).to.not.equal(null);
    const e = await stored(m![1]!);
    expect(e).to.deep.include({ kind: 'swaks', subject: 'from swaks', to_addresses: ['swaks@dest.test'] });
  });
});
