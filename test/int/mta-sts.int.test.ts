// MTA-STS (RFC 8461) through the real delivery worker, all on loopback: a DNS server answering
// MX, A and the `_mta-sts` TXT records, receiving SMTP servers with STARTTLS on 127.0.0.1 (a
// certificate from the test CA, valid for the MX names) and 127.0.0.2 (self-signed, for another
// name) sharing one port, and an HTTPS server on port 443 of a loopback address serving the
// policies. An `enforce` domain whose MX shows the wrong certificate gets nothing and waits with a
// reason naming MTA-STS; a `testing` one is delivered; policies are cached by id and fetched again
// when the id changes.
import { createServer, type Server } from 'node:https';
import { expect } from 'chai';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

/** A loopback address of its own for the policy server's port 443 (other files may use 127.0.0.1). */
const POLICY_ADDRESS = `127.${80 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 250) + 1}.1`;

/** The receiving hosts: `good` has a certificate for every MX name below; `bad` a self-signed one. */
const GOOD = '127.0.0.1';
const BAD = '127.0.0.2';
/** A host that offers no STARTTLS (its certificate would be valid). */
const PLAIN = '127.0.0.3';

describe('MTA-STS on direct MX delivery', () => {
  let api: TestApi;
  let org: SeededOrg;
  let ca: TestCa;
  let good: Sink;
  let bad: Sink;
  let plain: Sink;
  let dns: TestDns;
  let https: Server;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  /** A key that reads the emails (GET /emails/{id}). */
  let reader: { token: string };
  /** Policy files by policy host name (`mta-sts.<domain>`), and the fetches each one served. */
  const policies = new Map<string, string>();
  const fetches = new Map<string, number>();

  /** Publishes `domain`'s MX (one host at `address`), its TXT id and its policy file. */
  function publish(domain: string, mx: string, address: string, id: string, policy: string): void {
    dns.mx(domain, [{ exchange: mx, priority: 10 }]);
    dns.a(mx, [address]);
    dns.txt(`_mta-sts.${domain}`, [`v=STSv1; id=${id}`]);
    dns.a(`mta-sts.${domain}`, [POLICY_ADDRESS]);
    policies.set(`mta-sts.${domain}`, policy);
  }

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const domain = org.domains['acme.test']!;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domain.id}`;
    await giveDkimKey(api.deps.sql, domain.id);
    reader = await org.mint({ permission: 'FULL' });
    ca = makeTestCa();
    const mxNames = ['mx.good-enforce.test', 'mx.testing.test', 'other.unlisted.test', 'mx.enforce.test'];
    good = await startSink(() => null, { ...ca.issue(mxNames.slice(0, 3)) }, { host: GOOD });
    bad = await startSink(() => null, { ...ca.selfSigned('wrong.example') }, { host: BAD, port: good.port });
    const plainCert = ca.issue(['mx.plaintext.test']);
    plain = await startSink(
      () => null,
      { ...plainCert, disabledCommands: ['AUTH', 'STARTTLS'] },
      { host: PLAIN, port: good.port },
    );
    const policyCert = ca.issue(
      ['*.enforce.test', '*.good-enforce.test', '*.testing.test', '*.unlisted.test', '*.rotate.test'].concat([
        '*.mismatch.test',
        '*.plaintext.test',
        '*.nofile.test',
      ]),
    );
    policyCert.cert += ca.cert;
    https = createServer(policyCert, (req, res) => {
      const host = (req.headers.host ?? '').toLowerCase();
      fetches.set(host, (fetches.get(host) ?? 0) + 1);
      const policy = policies.get(host);
      if (!policy) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(policy);
    });
    await new Promise<void>((resolve, reject) => {
      https.once('error', reject);
      https.listen(443, POLICY_ADDRESS, resolve);
    });
    dns = await startDns();
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(good.port),
      DNS_SERVERS: dns.server,
      DELIVERY_RETRY_SECONDS: '0.3',
      HELO_NAME: 'mta.tern.test',
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0, trustedCa: [ca.cert] });
  });

  after(async () => {
    await worker?.close();
    await deps?.close();
    await good?.close();
    await bad?.close();
    await plain?.close();
    await new Promise<void>((resolve) => (https ? https.close(() => resolve()) : resolve()));
    await dns?.close();
    ca?.remove();
    await api?.close();
  });

  async function send(to: string): Promise<{ emailId: string; recipientId: string }> {
    const e = await seedEmail(api.deps.sql, {
      orgId: org.organization.id,
      domainId: org.domains['acme.test']!.id,
      domainName: 'acme.test',
      to: [to],
    });
    await enqueueEmail(api.deps.queues, e.id);
    return { emailId: e.id, recipientId: e.recipients[to]! };
  }

  async function recipient(id: string) {
    const [r] = await api.deps.sql<{ status: string; wait_reason: string | null; attempts: number }[]>`
      select status, wait_reason, attempts from email_recipients where id = ${id}`;
    return r!;
  }

  const policyFile = (mode: string, mx: string[]) =>
    `version: STSv1\r\nmode: ${mode}\r\n${mx.map((m) => `mx: ${m}\r\n`).join('')}max_age: 86400\r\n`;

  const receivedBy = (sink: Sink, to: string) => sink.received.filter((m) => m.rcptTo.includes(to));

  it('enforce: an MX with a self-signed certificate for another name gets nothing; the wait names MTA-STS', async () => {
    publish('enforce.test', 'mx.enforce.test', BAD, 'e1', policyFile('enforce', ['mx.enforce.test']));
    const { emailId, recipientId } = await send('someone@enforce.test');
    await waitFor('two attempts deferred', async () => (await recipient(recipientId)).attempts >= 2);
    const r = await recipient(recipientId);
    expect(r.status).to.equal('delivery_delayed');
    expect(r.wait_reason).to.match(/MTA-STS \(enforce\): mx\.enforce\.test: /);
    const events = await api.deps.sql<{ type: string; data: { response?: string } }[]>`
      select type, data from events where email_id = ${emailId} order by created_at`;
    expect(events.map((e) => e.type)).to.not.include.members(['email.delivered', 'email.bounced']);
    const delayed = events.filter((e) => e.type === 'email.delivery_delayed');
    expect(delayed).to.not.be.empty;
    for (const e of delayed) expect(e.data.response).to.match(/MTA-STS \(enforce\): mx\.enforce\.test: /);
    // The attempt's TLS: none was had, under the enforced policy.
    const tls = { version: null, cipher: null, policy: 'mta-sts', mode: 'enforce' };
    for (const e of delayed) expect((e.data as { tls?: unknown }).tls).to.deep.equal(tls);
    const res = await api.request('GET', `/api/v1/emails/${emailId}`, { token: reader.token });
    expect(res.status).to.equal(200);
    const [apiRecipient] = (res.json as { recipients: { tls: unknown; wait_reason: string }[] }).recipients;
    expect(apiRecipient!.tls).to.deep.equal(tls);
    expect(apiRecipient!.wait_reason).to.include('MTA-STS (enforce)');
    // Never plaintext, never the wrong host: no message reached either server.
    expect(receivedBy(bad, 'someone@enforce.test')).to.be.empty;
    expect(receivedBy(good, 'someone@enforce.test')).to.be.empty;
  });

  it('enforce: a certificate from a trusted CA for other names is refused', async () => {
    publish('mismatch.test', 'mx.mismatch.test', GOOD, 'm1', policyFile('enforce', ['mx.mismatch.test']));
    const { recipientId } = await send('someone@mismatch.test');
    await waitFor('two attempts deferred', async () => (await recipient(recipientId)).attempts >= 2);
    const r = await recipient(recipientId);
    expect(r.status).to.equal('delivery_delayed');
    expect(r.wait_reason).to.match(/MTA-STS \(enforce\): mx\.mismatch\.test: .*mx\.mismatch\.test/);
    expect(receivedBy(good, 'someone@mismatch.test')).to.be.empty;
  });

  it('enforce: an MX that offers no STARTTLS gets nothing in plaintext', async () => {
    publish('plaintext.test', 'mx.plaintext.test', PLAIN, 'p1', policyFile('enforce', ['mx.plaintext.test']));
    const { recipientId } = await send('someone@plaintext.test');
    await waitFor('two attempts deferred', async () => (await recipient(recipientId)).attempts >= 2);
    const r = await recipient(recipientId);
    expect(r.status).to.equal('delivery_delayed');
    expect(r.wait_reason).to.match(/MTA-STS \(enforce\): mx\.plaintext\.test: .*STARTTLS/);
    expect(plain.received).to.be.empty;
  });

  it('enforce: an allowed MX with a valid certificate is delivered over TLS', async () => {
    publish('good-enforce.test', 'mx.good-enforce.test', GOOD, 'g1', policyFile('enforce', ['*.good-enforce.test']));
    const { emailId, recipientId } = await send('someone@good-enforce.test');
    await waitFor('delivered', async () => (await recipient(recipientId)).status === 'delivered');
    const [m] = receivedBy(good, 'someone@good-enforce.test');
    expect(m?.secure).to.equal(true);
    const [delivered] = await api.deps.sql<{ data: { tls: Record<string, unknown> } }[]>`
      select data from events where email_id = ${emailId} and type = 'email.delivered'`;
    expect(delivered!.data.tls).to.include({ policy: 'mta-sts', mode: 'enforce' });
    expect(delivered!.data.tls.version).to.match(/^TLSv1\.[23]$/);
    const res = await api.request('GET', `/api/v1/emails/${emailId}`, { token: reader.token });
    const [apiRecipient] = (res.json as { recipients: { tls: unknown }[] }).recipients;
    expect(apiRecipient!.tls).to.deep.equal(delivered!.data.tls);
  });

  it('enforce: an MX the policy does not name is never tried', async () => {
    publish('unlisted.test', 'other.unlisted.test', GOOD, 'u1', policyFile('enforce', ['mx.unlisted.test']));
    const { recipientId } = await send('someone@unlisted.test');
    await waitFor('two attempts deferred', async () => (await recipient(recipientId)).attempts >= 2);
    const r = await recipient(recipientId);
    expect(r.status).to.equal('delivery_delayed');
    expect(r.wait_reason).to.include('MTA-STS (enforce) of unlisted.test: no MX host (other.unlisted.test)');
    expect(receivedBy(good, 'someone@unlisted.test')).to.be.empty;
  });

  it('testing: the same bad certificate is delivered', async () => {
    publish('testing.test', 'mx.testing.test', BAD, 't1', policyFile('testing', ['mx.testing.test']));
    const { emailId, recipientId } = await send('someone@testing.test');
    await waitFor('delivered', async () => (await recipient(recipientId)).status === 'delivered');
    expect(receivedBy(bad, 'someone@testing.test')).to.have.length(1);
    // Reported with the attempt: encrypted, under the testing policy.
    const [delivered] = await api.deps.sql<{ data: { tls: Record<string, unknown> } }[]>`
      select data from events where email_id = ${emailId} and type = 'email.delivered'`;
    expect(delivered!.data.tls).to.include({ policy: 'mta-sts', mode: 'testing' });
    expect(delivered!.data.tls.version).to.match(/^TLSv1\.[23]$/);
  });

  it('caches a policy by id in Redis, and fetches it again when the id changes', async () => {
    publish('rotate.test', 'mx.rotate.test', BAD, 'r1', policyFile('enforce', ['mx.rotate.test']));
    const { recipientId } = await send('someone@rotate.test');
    await waitFor('two attempts deferred', async () => (await recipient(recipientId)).attempts >= 2);
    const cached = JSON.parse((await deps.redis.get(deps.redisKeys.mtaStsPolicy('rotate.test')))!) as { id: string };
    expect(cached.id).to.equal('r1');
    // A new file under the same id is not fetched: the cached enforce policy still holds.
    policies.set('mta-sts.rotate.test', policyFile('testing', ['mx.rotate.test']));
    const before = (await recipient(recipientId)).attempts;
    await waitFor('two more attempts', async () => (await recipient(recipientId)).attempts >= before + 2);
    expect((await recipient(recipientId)).status).to.equal('delivery_delayed');
    expect(fetches.get('mta-sts.rotate.test')).to.equal(1);
    // A new id: fetched again, now testing, and delivered.
    dns.txt('_mta-sts.rotate.test', ['v=STSv1; id=r2']);
    await waitFor('delivered', async () => (await recipient(recipientId)).status === 'delivered');
    expect(fetches.get('mta-sts.rotate.test')).to.equal(2);
    expect(receivedBy(bad, 'someone@rotate.test')).to.have.length(1);
  });

  it('a policy that cannot be fetched (HTTP 404) leaves the domain without one: delivered', async () => {
    publish('nofile.test', 'mx.nofile.test', BAD, 'n1', '');
    policies.delete('mta-sts.nofile.test');
    const { recipientId } = await send('someone@nofile.test');
    await waitFor('delivered', async () => (await recipient(recipientId)).status === 'delivered');
    expect(fetches.get('mta-sts.nofile.test')).to.be.at.least(1);
    expect(receivedBy(bad, 'someone@nofile.test')).to.have.length(1);
  });

  it('a domain without a policy keeps opportunistic TLS (the self-signed MX receives)', async () => {
    dns.mx('plain.test', [{ exchange: 'mx.plain.test', priority: 10 }]);
    dns.a('mx.plain.test', [BAD]);
    const { recipientId } = await send('someone@plain.test');
    await waitFor('delivered', async () => (await recipient(recipientId)).status === 'delivered');
    expect(receivedBy(bad, 'someone@plain.test')).to.have.length(1);
  });
});
