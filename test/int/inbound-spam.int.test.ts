// Inbound scoring with rspamd (DESIGN §20) through a real rspamd, the real MX, the inbound worker
// and the webhook pipeline: a reply's email.received carries spam {score, action, symbols}; GTUBE
// is flagged; a route with spam_threshold refuses a message scored above it (kept, no webhook);
// with rspamd stopped a reply is still stored and delivered, with spam {status: "unchecked"}.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { createTransport } from 'nodemailer';
import { startInboundWorker } from '../../workers/inbound.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { startMx, type TestMx } from '../helpers/mx.js';
import { rspamdMissing, startRspamd, type TestRspamd } from '../helpers/rspamd.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';
import type { WorkerDeps } from '../../workers/deps.js';

const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

describe('inbound scoring with rspamd', function () {
  this.timeout(300_000); // rspamd loads its rules in seconds, minutes on a loaded machine
  let rspamd: TestRspamd | null;
  let dns: TestDns;
  let s: WebhookStack;
  let mx: TestMx;
  let deps: WorkerDeps;
  let worker: Worker;

  before(async function () {
    const missing = rspamdMissing();
    if (missing) {
      console.log(`      skipped: ${missing}`);
      this.skip();
    }
    rspamd = await startRspamd();
    dns = await startDns();
    const env = { RSPAMD_URL: rspamd!.url, DNS_SERVERS: dns.server };
    s = await startWebhookStack({ env });
    deps = workerDepsFor(s.api, env);
    worker = startInboundWorker(deps);
    mx = await startMx(s.api);
    await s.createWebhook({ url: `${s.receiver.url}/in`, events: ['email.received'] });
    const domainId = s.org.domains['acme.test']!.id;
    const routes = [{ match: 'support@acme.test', action: 'webhook', spam_threshold: 10 }];
    const res = await s.api.request('PATCH', `/domains/${domainId}`, {
      token: s.org.key.token,
      body: { inbound: { enabled: true, routes } },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.inbound.routes).to.deep.equal(routes);
  });
  after(async () => {
    await mx?.close();
    await worker?.close();
    await deps?.close();
    await s?.close();
    await dns?.close();
    await rspamd?.close();
  });

  async function send(to: string, subject: string, text: string): Promise<string> {
    const transport = createTransport({ host: '127.0.0.1', port: mx.port, secure: false, ignoreTLS: true });
    try {
      const info = await transport.sendMail({ from: 'Pat <pat@sender.test>', to, subject, text });
      return /queued as (inb_[0-9A-Z]+)/.exec(info.response)![1]!;
    } finally {
      transport.close();
    }
  }
  const stored = (id: string) =>
    waitFor(
      `inbound ${id} processed`,
      async () => {
        const [row] = await s.api.deps.sql`select * from inbound_messages where id = ${id} and status = 'processed'`;
        return row;
      },
      60_000,
    );
  const hook = async (id: string) => {
    const [r] = await s.receiver.waitForRequests(1, (x) => JSON.parse(x.raw.toString()).data.inbound_id === id, 60_000);
    return JSON.parse(r!.raw.toString()).data;
  };

  it("a reply's email.received carries rspamd's score, action and symbols", async () => {
    const id = await send('team@reply.acme.test', 'Re: your invoice', 'Thanks, that works for us.\n\nPat');
    const data = await hook(id);
    expect(data.spam).to.have.keys(['score', 'action', 'symbols']);
    expect(data.spam.score).to.be.a('number').below(10);
    expect(data.spam.action).to.be.a('string');
    expect(data.spam.symbols.length).to.be.greaterThan(0);
    for (const sym of data.spam.symbols) expect(sym).to.have.keys(['name', 'score']);
    expect((await stored(id)).spam).to.deep.equal(data.spam);
  });

  it('flags GTUBE, and a route with spam_threshold refuses it: kept, no webhook', async () => {
    const flagged = await send('team@reply.acme.test', 'Offer', `Hello\n${GTUBE}\n`);
    const data = await hook(flagged);
    expect(data.spam.action).to.equal('reject');
    expect(data.spam.score).to.be.at.least(15);
    expect(data.spam.symbols.map((x: { name: string }) => x.name)).to.include('GTUBE');

    const refused = await send('support@acme.test', 'Offer', `Hello\n${GTUBE}\n`);
    const row = await stored(refused);
    expect(row.kind).to.equal('spam');
    expect(row.error).to.match(/^spam score \d+(\.\d+)? above the threshold 10 of the route support@acme\.test$/);
    expect(row.spam.action).to.equal('reject');
    const kept = await send('support@acme.test', 'Question', 'How do I reset my password?\n\nPat');
    expect((await hook(kept)).spam.score).to.be.below(10);
    const events = await s.api.deps.sql`select 1 from events where inbound_id = ${refused}`;
    expect(events).to.have.length(0);
  });

  it('with rspamd down the message is kept and delivered to the webhook, unchecked', async () => {
    await rspamd!.close();
    const id = await send('team@reply.acme.test', 'Re: hello', 'Still here.\n');
    const data = await hook(id);
    expect(data.spam).to.deep.equal({ status: 'unchecked' });
    expect(data.subject).to.equal('Re: hello');
    expect((await stored(id)).spam).to.deep.equal({ status: 'unchecked' });
  });
});
