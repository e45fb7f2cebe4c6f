// End to end: a nodemailer client sends through the relay; the delivery worker delivers the
// message to a local MX (smarthost) with the client's headers and body intact, plus Tern's
// DKIM-Signature and VERP envelope, and nothing else changed.
import { expect } from 'chai';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import MailComposer from 'nodemailer/lib/mail-composer';
import { parseVerpAddress } from '../../shared/mail/verp.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { giveDkimKey, type DkimPair } from '../helpers/mail-seed.js';
import { startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

/** The message with a header field added by the delivery (DKIM-Signature) taken out again. */
function withoutField(raw: Buffer, name: string): Buffer {
  const text = raw.toString('latin1');
  const re = new RegExp(`^${name}:.*\\r\\n(?:[ \\t].*\\r\\n)*`, 'im');
  return Buffer.from(text.replace(re, ''), 'latin1');
}

describe('SMTP relay → delivery worker', () => {
  let api: TestApi;
  let org: SeededOrg;
  let relay: TestRelay;
  let sink: Sink;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  let dkim: DkimPair;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const domainId = org.domains['acme.test']!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    dkim = await giveDkimKey(api.deps.sql, domainId);
    relay = await startRelay(api);
    sink = await startSink();
    deps = workerDepsFor(api, {
      SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}?tls_verify=false`,
      HELO_NAME: 'mta.tern.test',
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });
  after(async () => {
    await worker.close();
    await deps.close();
    await sink.close();
    await relay.close();
    await api.close();
  });

  const recipientStatus = async (emailId: string) =>
    await api.deps.sql<{ email: string; status: string; id: string }[]>`
      select id, email, status from email_recipients where email_id = ${emailId} order by email`;

  it('delivers the client’s message as written, DKIM-signed, with a VERP return path, bcc included', async () => {
    const original = await new MailComposer({
      from: 'Acme <hello@acme.test>',
      to: 'alice@dest.test',
      subject: 'Relayed',
      messageId: '<thread-1@acme.test>',
      headers: { 'X-Client-Header': 'kept as is', 'In-Reply-To': '<earlier@acme.test>' },
      html: '<p>Hi <img src="cid:pic@acme"></p>',
      attachments: [
        { filename: 'pic.png', content: Buffer.alloc(2000, 7), cid: 'pic@acme' },
        { filename: 'notes.txt', content: 'attached notes' },
      ],
    })
      .compile()
      .build();
    const sent = Buffer.concat([Buffer.from('X-Tern-Tags: flow=relay\r\n'), original]);
    const key = await org.mint({ permission: 'SEND' });
    const info = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['alice@dest.test', 'hidden@dest.test'] },
      raw: sent,
    });
    const id = /queued as (em_\w+)/.exec(info.response ?? '')![1]!;

    await waitFor('both recipients delivered', async () =>
      (await recipientStatus(id)).every((r) => r.status === 'delivered'),
    );
    const rows = await recipientStatus(id);
    for (const r of rows) {
      const msg = sink.received.find((m) => m.rcptTo.includes(r.email));
      expect(msg, r.email).to.not.equal(undefined);
      expect(parseVerpAddress(msg!.mailFrom, deps.config.secretKey)).to.equal(r.id);
      // Byte for byte what the client wrote (minus X-Tern-Tags), once Tern's DKIM-Signature is taken out.
      expect(msg!.raw.toString('latin1')).to.match(/^DKIM-Signature: /m);
      expect(Buffer.compare(withoutField(msg!.raw, 'DKIM-Signature'), original)).to.equal(0);
      const result = await dkimVerify(msg!.raw, {
        resolver: async (name: string, rr: string) => {
          if (rr === 'TXT' && name === 'tern._domainkey.acme.test') return [[`v=DKIM1; k=rsa; p=${dkim.publicB64}`]];
          throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        },
      });
      expect(result.results[0]!.status.result).to.equal('pass');
    }
    const [e] = await api.deps.sql<{ message_id: string; tags: unknown }[]>`
      select message_id, tags from emails where id = ${id}`;
    expect(e).to.deep.equal({ message_id: 'thread-1@acme.test', tags: [{ name: 'flow', value: 'relay' }] });
    const types = await api.deps.sql<{ type: string }[]>`
      select type from events where email_id = ${id} and recipient = 'alice@dest.test' order by id`;
    expect(types.map((t) => t.type)).to.deep.equal(['email.sent', 'email.delivered']);
  });

  it('adds a Message-ID <email_id@domain> and a Date (when the relay took it) when the client gave none, and nothing else', async () => {
    const original = Buffer.from('From: hello@acme.test\r\nTo: bob@dest.test\r\nSubject: bare\r\n\r\nno id\r\n');
    const key = await org.mint({ permission: 'SEND' });
    const info = await relay.transport(key.id, key.token).sendMail({
      envelope: { from: 'hello@acme.test', to: ['bob@dest.test'] },
      raw: original,
    });
    const id = /queued as (em_\w+)/.exec(info.response ?? '')![1]!;
    await waitFor('delivered', async () => (await recipientStatus(id))[0]?.status === 'delivered');
    const msg = sink.received.find((m) => m.rcptTo.includes('bob@dest.test'))!;
    const unsigned = withoutField(msg.raw, 'DKIM-Signature');
    const [e] = await api.deps.sql<{ created_at: Date }[]>`select created_at from emails where id = ${id}`;
    const date = e!.created_at.toUTCString().replace(/GMT$/, '+0000');
    expect(unsigned.toString('latin1')).to.equal(
      `Message-ID: <${id}@acme.test>\r\nDate: ${date}\r\n${original.toString('latin1')}`,
    );
  });
});
