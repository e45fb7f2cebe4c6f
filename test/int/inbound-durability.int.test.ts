import { expect } from 'chai';
import { createQueues } from '../../shared/queues.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { queuedId, smtpSession, startMx, startMxWithWorker } from '../helpers/mx.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

const TO = 'support@reply.acme.test';

describe('MX durability and attachments', () => {
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
    return await waitFor('the inbound message to be processed', async () => {
      const [row] = await api.deps.sql`select * from inbound_messages where id = ${id} and status <> 'stored'`;
      return row;
    });
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
      const listed = got.json.attachments as { id: string }[];
      for (const a of listed) expect(a.id).to.match(/^att_[0-9A-Z]{26}$/);
      expect(listed.map(({ id: _id, ...rest }) => rest)).to.deep.equal([
        { filename: 'invoice.pdf', content_type: 'application/pdf', size: pdf.length },
        { filename: 'logo.png', content_type: 'image/png', size: png.length },
      ]);
      const stored = await api.deps.sql`
        select content, content_id from inbound_attachments where inbound_id = ${id} order by position`;
      expect(Buffer.compare(stored[0]!.content, pdf)).to.equal(0);
      expect(Buffer.compare(stored[1]!.content, png)).to.equal(0);
      expect(stored[1]!.content_id).to.equal('logo@example.net');
    });
  });
});
