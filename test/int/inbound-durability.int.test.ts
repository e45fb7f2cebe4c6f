import { expect } from 'chai';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { queuedId, smtpSession, startMx, startMxWithWorker, until } from '../helpers/mx.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { freePort } from '../helpers/ports.js';

const TO = 'support@reply.acme.test';

function nestedMultipart(depth: number): string {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`;
    close = `--n${i}--\r\n${close}`;
  }
  return `From: a@example.net\r\nTo: ${TO}\r\nSubject: nested\r\nMIME-Version: 1.0\r\n${open}Content-Type: text/plain\r\n\r\ndeep\r\n${close}`;
}

/** Bytes 0–255 except CR and LF (SMTP framing), as the characters a raw socket writes. */
function garbage(n: number, seed: number): string {
  let x = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    const b = (x >>> 16) & 0xff;
    out += b === 10 || b === 13 ? 'x' : String.fromCharCode(b);
    if (i % 70 === 69) out += '\r\n';
  }
  return out;
}

describe('MX durability, attachments and hostile MIME', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
  });
  after(async () => {
    await api.close();
  });

  async function finished(id: string) {
    return await until(async () => {
      const [row] = await api.deps.sql`select * from inbound_messages where id = ${id} and status <> 'stored'`;
      return row;
    }, 20_000);
  }

  describe('with Redis unreachable from the MX', () => {
    it('answers 250 once the row is stored, and the sweeper processes it later', async () => {
      const deadRedis = createRedis(`redis://127.0.0.1:${await freePort()}`, 'api', 'tern-mx-test');
      const deadQueues = createQueues(deadRedis, 'dead');
      const mx = await startMx(api, { queues: deadQueues, enqueueWaitMs: 200 });
      const closeMx = track('mx with dead redis', async () => {
        await mx.close();
        await closeRedis(deadRedis);
      });
      const reply = `From: pat@example.net\r\nTo: ${TO}\r\nSubject: stored first\r\n\r\nHello\r\n`;
      const { data } = await smtpSession(mx.port, [TO], reply);
      await closeMx();
      expect(data!.code).to.equal(250);
      const id = queuedId(data);
      const [stored] = await api.deps.sql`select status from inbound_messages where id = ${id}`;
      expect(stored!.status).to.equal('stored');

      const deps = workerDepsFor(api);
      const worker = startInboundWorker(deps, { sweepEveryMs: 100, staleAfterMs: 0 });
      const closeWorker = track('inbound worker', async () => {
        await worker.close();
        await deps.close();
      });
      try {
        const row = await finished(id);
        expect(row).to.include({ status: 'processed', kind: 'reply', subject: 'stored first' });
        const [event] = await api.deps.sql`select type from events where inbound_id = ${id}`;
        expect(event!.type).to.equal('email.received');
      } finally {
        await closeWorker();
      }
    });
  });

  describe('with the worker running', () => {
    let port: number;
    let closeAll: () => Promise<void>;

    before(async () => {
      const mx = await startMxWithWorker(api, { maxBytes: 2 * 1024 * 1024 });
      port = mx.port;
      closeAll = mx.close;
    });
    after(async () => closeAll());

    it('stores the attachments of a reply and lists them on GET /inbound/:id', async () => {
      const pdf = Buffer.from('%PDF-1.4\n% not really a PDF\n');
      const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
      const msg = [
        'From: Pat <pat@example.net>',
        `To: ${TO}`,
        'Subject: Re: invoice',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="att"',
        '',
        '--att',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'See attached.',
        '--att',
        'Content-Type: application/pdf; name="invoice.pdf"',
        'Content-Disposition: attachment; filename="invoice.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        pdf.toString('base64'),
        '--att',
        'Content-Type: image/png',
        'Content-Disposition: inline; filename="logo.png"',
        'Content-ID: <logo@example.net>',
        'Content-Transfer-Encoding: base64',
        '',
        png.toString('base64'),
        '--att--',
        '',
      ].join('\r\n');
      const id = queuedId((await smtpSession(port, [TO], msg)).data);
      expect((await finished(id)).status).to.equal('processed');
      const got = await api.request('GET', `/inbound/${id}`, { token: org.key.token });
      expect(got.status).to.equal(200);
      expect(got.json.attachments).to.deep.equal([
        { filename: 'invoice.pdf', content_type: 'application/pdf', size: pdf.length },
        { filename: 'logo.png', content_type: 'image/png', size: png.length },
      ]);
      const stored = await api.deps.sql`
        select content, content_id from inbound_attachments where inbound_id = ${id} order by position`;
      expect(Buffer.compare(stored[0]!.content, pdf)).to.equal(0);
      expect(Buffer.compare(stored[1]!.content, png)).to.equal(0);
      expect(stored[1]!.content_id).to.equal('logo@example.net');
    });

    const hostile: [string, () => string][] = [
      ['a multipart nested 1000 levels deep', () => nestedMultipart(1000)],
      [
        'a 100 KB header line',
        () => `From: a@example.net\r\nTo: ${TO}\r\nX-Long: ${'a'.repeat(100_000)}\r\nSubject: long\r\n\r\nbody\r\n`,
      ],
      [
        'an unknown charset',
        () =>
          `From: a@example.net\r\nTo: ${TO}\r\nSubject: =?x-unknown-42?B?aGVsbG8=?=\r\nContent-Type: text/plain; charset="x-unknown-42"\r\n\r\nh\u00e9llo\r\n`,
      ],
      ['a 0-byte message', () => ''],
      ['binary garbage with NUL bytes', () => garbage(20_000, 7)],
      [
        'NUL bytes in the headers and body',
        () => `From: a@example.net\r\nTo: ${TO}\r\nSubject: a\u0000b\r\n\r\nx\u0000y\r\n`,
      ],
    ];
    for (const [name, make] of hostile) {
      it(`survives ${name}: the row ends processed or failed, the job is not retried`, async () => {
        const { data } = await smtpSession(port, [TO], make());
        expect(data!.code).to.equal(250);
        const id = queuedId(data);
        const row = await finished(id);
        expect(['processed', 'failed']).to.include(row.status);
        if (row.status === 'failed') expect(row.error).to.be.a('string').and.not.equal('');
        const job = await until(async () => {
          const j = await api.deps.queues.inbound.getJob(id);
          return j && (j.finishedOn ? j : null);
        });
        expect(job.attemptsMade).to.be.at.most(1);
        expect(await job.getState()).to.be.oneOf(['completed', 'failed']);
      });
    }
  });
});
