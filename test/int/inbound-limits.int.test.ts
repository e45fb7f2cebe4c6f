// Bounded parsing of received mail through the real MX, inbound worker, API and console: a
// message built to hang mailparser (thousands of MIME parts: its child-node limit leaves the
// parse unsettled) or to nest without end is kept raw and marked `unparsed` with its reason,
// never retried, and never holds the inbound slots: a normal reply sent right after the bombs
// is processed as usual. The console's email page shows a relay message of that kind with a
// notice instead of hanging.
import { expect } from 'chai';
import { ConsoleClient } from '../helpers/console.js';
import { partsBomb } from '../../bench/lib/inbound-mail.js';
import { queuedId, smtpSession, startMxWithWorker } from '../helpers/mx.js';
import { startRelay, type TestRelay } from '../helpers/relay.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

/** `depth` multiparts each inside the previous one. */
function nestingBomb(to: string, depth: number): string {
  const open = Array.from(
    { length: depth },
    (_, i) => `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`,
  );
  const close = Array.from({ length: depth }, (_, i) => `\r\n--n${depth - 1 - i}--`);
  return `From: someone@example.net\r\nTo: ${to}\r\nSubject: deep\r\nMIME-Version: 1.0\r\n${open.join('')}Content-Type: text/plain\r\n\r\ndeep${close.join('')}\r\n`;
}

function reply(to: string, subject: string): string {
  return `From: Carol <carol@example.net>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.net>\r\n\r\nThanks, that works.\r\n`;
}

describe('inbound parse limits (MX → inbound worker → API, console)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let port: number;
  let closeMx: () => Promise<void>;
  const to = 'support@reply.acme.test';

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const mx = await startMxWithWorker(api, { maxBytes: 2 * 1024 * 1024 });
    port = mx.port;
    closeMx = mx.close;
  });
  after(async () => {
    await closeMx?.();
    await api?.close();
  });

  const send = async (message: string) => queuedId((await smtpSession(port, [to], message)).data);
  const row = async (id: string) =>
    (
      await api.deps.sql<{ status: string; error: string | null; kind: string | null; raw: Buffer }[]>`
        select status, error, kind, raw from inbound_messages where id = ${id}`
    )[0]!;
  const settled = (id: string) =>
    waitFor(`${id} settled`, async () => ((await row(id)).status === 'stored' ? null : await row(id)), 30_000);

  it('processes a normal reply sent right after eight part bombs, and keeps each bomb raw, marked unparsed', async () => {
    const bomb = partsBomb(to, 4000);
    expect(bomb.length).to.be.within(800_000, 900_000);
    const bombs: string[] = [];
    for (let i = 0; i < 8; i++) bombs.push(await send(bomb));
    const normal = await send(reply(to, 'Re: invoice 1'));

    const done = await settled(normal);
    expect(done.status).to.equal('processed');
    expect(done.kind).to.equal('reply');

    for (const id of bombs) {
      const r = await settled(id);
      expect(r.status, r.error ?? '').to.equal('unparsed');
      expect(r.error).to.equal('not parsed: more than 500 MIME parts');
      expect(r.kind).to.equal('reply');
      expect(r.raw.toString()).to.equal(bomb);
    }
    // The API shows the message with its state and reason; its raw bytes are kept.
    const got = await api.request('GET', `/inbound/${bombs[0]}`, { token: org.key.token });
    expect(got.status).to.equal(200);
    expect(got.json).to.include({
      status: 'unparsed',
      error: 'not parsed: more than 500 MIME parts',
      from: 'someone@example.net',
    });
    const list = await api.request('GET', '/inbound?limit=100', { token: org.key.token });
    const listed = (list.json.data as { id: string; status: string }[]).filter((m) => bombs.includes(m.id));
    expect(listed.map((m) => m.status)).to.deep.equal(Array(8).fill('unparsed'));
  });

  it('marks a message whose multiparts nest past the depth limit, and never parses it again', async () => {
    const id = await send(nestingBomb(to, 80));
    const r = await settled(id);
    expect(r.status).to.equal('unparsed');
    expect(r.error).to.equal('not parsed: MIME parts nest deeper than 50');
    // Its job again (a redelivery, the sweeper): nothing changes.
    await api.deps.queues.inbound.add('inbound', { inboundId: id }, { jobId: `${id}-again` });
    const again = await send(reply(to, 'Re: after the nested one'));
    expect((await settled(again)).status).to.equal('processed');
    expect(await row(id)).to.deep.include({ status: 'unparsed', error: r.error });
  });

  it('shows a relay message that would hang the parser with a notice on the console’s email page', async () => {
    const relay: TestRelay = await startRelay(api);
    try {
      const key = await org.mint({ permission: 'SEND', mode: 'test' });
      const info = await relay.transport(key.id, key.token).sendMail({
        envelope: { from: 'billing@acme.test', to: ['dana@example.net'] },
        raw: partsBomb('dana@example.net', 4000).replace('someone@example.net', 'billing@acme.test'),
      });
      const emailId = /queued as (em_[0-9A-Z]+)/.exec(info.response ?? '')![1]!;
      const browser = new ConsoleClient(api.url);
      expect((await browser.login(org.user.email, org.user.password)).status).to.equal(303);
      const page = await browser.get(`/console/emails/${emailId}`);
      expect(page.status).to.equal(200);
      expect(page.text).to.contain('data-unparsed');
      expect(page.text).to.contain('its MIME was not parsed (more than 500 MIME parts)');
      const frame = await browser.get(`/console/emails/${emailId}/html`);
      expect(frame.status).to.equal(200);
      expect(frame.text).to.contain('This message was not parsed for display.');
    } finally {
      await relay.close();
    }
  });
});
