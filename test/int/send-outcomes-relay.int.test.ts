// What the SMTP relay and POST /broadcasts/{id}/send answer says was stored (issue 11 item 12):
// a 4xx from the relay makes its client send again, so the relay answers one only when nothing
// was stored, and after an unconfirmed store the client's resend of the same bytes is stored
// once; a broadcast send cut after its COMMIT answers its success, and a 504 is settled by the
// retry with the same Idempotency-Key. Postgres is reached through a cutting proxy.
import { expect } from 'chai';
import { batchJobId } from '../../shared/broadcast-jobs.js';
import { startOutcomeStack, type OutcomeStack } from '../helpers/outcome-stack.js';
import { refusal, startRelay, type TestRelay } from '../helpers/relay.js';

describe('what the relay’s and a broadcast send’s answers say was stored', function () {
  this.timeout(120_000);
  let s: OutcomeStack;
  let relay: TestRelay;

  before(async () => {
    s = await startOutcomeStack();
    relay = await startRelay(s.api);
  });
  after(async () => {
    await relay.close();
    await s.close();
  });
  afterEach(async () => s.proxy.up());

  const stored = async (subject: string) =>
    (await s.db.sql<{ id: string }[]>`select id from emails where subject = ${subject} order by id`).map((r) => r.id);

  describe('SMTP relay', () => {
    const raw = (subject: string) =>
      Buffer.from(`From: hi@acme.test\r\nTo: ann@dest.test\r\nSubject: ${subject}\r\n\r\nHello\r\n`);
    const relayed = (bytes: Buffer) =>
      relay
        .transport(s.send.id, s.send.token)
        .sendMail({ envelope: { from: 'hi@acme.test', to: ['ann@dest.test'] }, raw: bytes });
    const queuedAs = (response: string | undefined) => /queued as (em_\w+)/.exec(response ?? '')?.[1];

    it('a connection cut after COMMIT: 250, stored and delivered once', async () => {
      const subject = s.marker();
      const cut = s.proxy.breakAfterCommit(subject);
      const info = await relayed(raw(subject));
      await cut;
      const id = queuedAs(info.response)!;
      expect(await stored(subject)).to.deep.equal([id]);
      await s.deliveredOnce([id]);
    });

    it('Postgres refusing connections: 451 and nothing stored', async () => {
      const subject = s.marker();
      await s.proxy.down();
      const refused = await refusal(relayed(raw(subject)));
      expect(refused.code).to.equal(451);
      expect(refused.response).to.contain('4.3.0 Temporary failure');
      await s.proxy.up();
      expect(await stored(subject)).to.deep.equal([]);
    });

    for (const when of ['after-commit', 'before-send'] as const) {
      it(`an unconfirmed store (cut ${when}, Postgres gone): 451, and the resend of the same bytes is stored once`, async () => {
        const subject = s.marker();
        const bytes = raw(subject);
        const cut =
          when === 'after-commit'
            ? s.proxy.breakAfterCommit(subject, { thenDown: true })
            : s.proxy.breakBeforeSend(subject, { thenDown: true });
        const refused = await refusal(relayed(bytes));
        await cut;
        expect(refused.code).to.equal(451);
        expect(refused.response).to.contain('may have been stored');
        const first = await stored(subject);
        expect(first).to.have.length(when === 'after-commit' ? 1 : 0);

        await s.proxy.up();
        const info = await relayed(bytes);
        const id = queuedAs(info.response)!;
        if (first.length === 1) expect(id).to.equal(first[0]);
        expect(await stored(subject)).to.deep.equal([id]);
        await s.deliveredOnce([id]);
      });
    }
  });

  describe('POST /broadcasts/{id}/send', () => {
    let segmentId: string;

    before(async () => {
      const admin = s.org.key.token;
      const seg = await s.api.request('POST', '/segments', {
        token: admin,
        body: { name: 'dest', filter: { field: 'email', op: 'ends_with', value: '@dest.test' } },
      });
      expect(seg.status, seg.text).to.equal(201);
      segmentId = seg.json.id;
    });

    async function draft(): Promise<string> {
      const res = await s.api.request('POST', '/broadcasts', {
        token: s.send.token,
        body: { from: 'news@acme.test', subject: 'News', html: '<p>News</p>', segment_id: segmentId },
      });
      expect(res.status, res.text).to.equal(201);
      return res.json.id as string;
    }

    /** A send time tomorrow whose ISO text no other statement carries (the proxy's marker). */
    const sendTime = () => new Date(Date.now() + 86_400_000 + Math.floor(Math.random() * 3600_000));
    const sendIt = (id: string, at: Date, headers: Record<string, string> = {}) =>
      s.api.request('POST', `/broadcasts/${id}/send`, {
        token: s.send.token,
        body: { scheduled_at: at.toISOString() },
        headers,
      });
    const statusOf = async (id: string) =>
      (await s.db.sql<{ status: string }[]>`select status from broadcasts where id = ${id}`)[0]!.status;

    it('a connection cut after COMMIT: 200 scheduled, its first batch job added once', async () => {
      const id = await draft();
      const at = sendTime();
      const cut = s.proxy.breakAfterCommit(at.toISOString());
      const res = await sendIt(id, at);
      await cut;
      expect(res.status, res.text).to.equal(200);
      expect(res.json).to.deep.include({ id, status: 'scheduled', scheduled_at: at.toISOString() });
      expect(await statusOf(id)).to.equal('scheduled');
      expect(await s.api.deps.queues.broadcast.getJob(batchJobId(id, null))).to.not.equal(undefined);
    });

    it('POST /broadcasts with send: true cut after its COMMIT: 201, one broadcast, sending; refused: 503, none', async () => {
      const create = (name: string) =>
        s.api.request('POST', '/broadcasts', {
          token: s.send.token,
          body: {
            name,
            from: 'news@acme.test',
            subject: 'News',
            html: '<p>News</p>',
            segment_id: segmentId,
            send: true,
          },
        });
      const rowsNamed = async (name: string) =>
        await s.db.sql<{ id: string; status: string }[]>`select id, status from broadcasts where name = ${name}`;
      const name = s.marker();
      const cut = s.proxy.breakAfterCommit(name);
      const res = await create(name);
      await cut;
      expect(res.status, res.text).to.equal(201);
      expect(await rowsNamed(name)).to.deep.equal([{ id: res.json.id, status: 'sending' }]);

      const refused = s.marker();
      await s.proxy.down();
      const down = await create(refused);
      expect(down.status).to.equal(503);
      expect(down.json.error.code).to.equal('unavailable');
      await s.proxy.up();
      expect(await rowsNamed(refused)).to.deep.equal([]);
    });

    it('Postgres gone after the COMMIT: 504 naming the broadcast; the retry with the key answers the send', async () => {
      const id = await draft();
      const at = sendTime();
      const key = { 'Idempotency-Key': `send-${id}` };
      const cut = s.proxy.breakAfterCommit(at.toISOString(), { thenDown: true });
      const first = await sendIt(id, at, key);
      await cut;
      expect(first.status, first.text).to.equal(504);
      expect(first.json.error.code).to.equal('outcome_unknown');
      expect(first.json.error.message).to.contain(`Broadcast ${id} may or may not have been sent`);
      expect(await statusOf(id)).to.equal('scheduled');

      await s.proxy.up();
      const retry = await sendIt(id, at, key);
      expect(retry.status, retry.text).to.equal(200);
      expect(retry.json).to.deep.include({ id, status: 'scheduled' });
      // Without the key, a second send is refused: a broadcast is sent once.
      const again = await sendIt(id, at);
      expect(again.status).to.equal(409);
      expect(again.json.error.code).to.equal('invalid_state');
    });
  });
});
