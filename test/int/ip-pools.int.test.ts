// IP pools through real SMTP on the loopback range (Linux routes all of 127/8 on lo): the
// receiving MX sees the pool's address as the connection's source and the pool's EHLO name, for
// a domain, an organization and a stream assignment (the most specific wins); connections are
// never reused across sources; each address warms up on its own cap, on top of the domain's ramp,
// which an established domain skips; the SPF record names the pool addresses.
import { expect } from 'chai';
import type { SMTPServerSession } from 'smtp-server';
import { poolCommands } from '../../api/cli/commands/pool.js';
import type { CliContext, Command, Values } from '../../api/cli/command.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import { ProviderThrottle, DEFAULT_THROTTLE } from '../../workers/delivery/throttle.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { enqueueEmail, giveDkimKey, seedEmail } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { expectError, startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const MX_HOST = 'mx.pools.test';

describe('IP pools (real SMTP from 127.0.0.2 / 127.0.0.3)', function () {
  this.timeout(60_000);
  let api: TestApi;
  let plain: SeededOrg; // no pool of its own
  let pooled: SeededOrg; // org pool, and a domain pool on one of its domains
  let sink: Sink;
  let dns: TestDns;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  /** Per SMTP session: the source address and the EHLO name the MX saw. */
  const sessions = new Map<string, { remote: string; ehlo: string }>();

  const cli = async (name: string, values: Values): Promise<unknown> => {
    const cmd = poolCommands.find((c) => c.name === name) as Command;
    const printed: unknown[] = [];
    const ctx = { sql: () => api.deps.sql, json: (v: unknown) => printed.push(v), out: () => {} };
    await cmd.run({ ...values, json: true }, ctx as unknown as CliContext);
    return printed[0];
  };

  before(async () => {
    dns = await startDns();
    api = await startApi({ env: { MX_HOST, DNS_SERVERS: dns.server } });
    plain = await seedOrg(api.deps.sql, { domains: [{ name: 'plain.test' }] });
    pooled = await seedOrg(api.deps.sql, { domains: [{ name: 'org.test' }, { name: 'own.test' }] });
    for (const d of [plain.domains['plain.test']!, pooled.domains['org.test']!, pooled.domains['own.test']!]) {
      await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${d.id}`;
      await giveDkimKey(api.deps.sql, d.id);
    }
    sink = await startSink(() => null, {
      onConnect(session: SMTPServerSession, cb: (err?: Error | null) => void) {
        sessions.set(session.id, { remote: session.remoteAddress, ehlo: '' });
        cb();
      },
      onMailFrom(_address, session: SMTPServerSession, cb: (err?: Error | null) => void) {
        sessions.get(session.id)!.ehlo = session.hostNameAppearsAs;
        cb();
      },
    });
    dns.mx('rcpt.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      HELO_NAME: 'default.pools.test',
      DELIVERY_RETRY_SECONDS: '0.5',
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
  });

  after(async () => {
    await worker.close();
    await deps.close();
    await sink.close();
    await dns.close();
    await api.close();
  });

  const send = async (org: SeededOrg, domain: string, to: string[], source?: string) => {
    const d = org.domains[domain]!;
    const e = await seedEmail(api.deps.sql, { orgId: org.organization.id, domainId: d.id, domainName: domain, to });
    // A broadcast's message: its source and the stream that source implies.
    if (source) await api.deps.sql`update emails set source = ${source}, stream = 'broadcast' where id = ${e.id}`;
    await enqueueEmail(api.deps.queues, e.id);
    return e;
  };
  const status = async (rid: string) =>
    (
      await api.deps.sql<{ status: string; wait_reason: string | null }[]>`
        select status, wait_reason from email_recipients where id = ${rid}`
    )[0]!;
  /** Where the MX saw the one message to `to` come from. */
  const seenFrom = async (to: string) => {
    const m = await waitFor(`${to} received`, async () => sink.received.find((r) => r.rcptTo.includes(to)));
    return sessions.get(m.session)!;
  };

  it('without a pool, mail leaves from the default address with HELO_NAME', async () => {
    await send(plain, 'plain.test', ['first@rcpt.test']);
    expect(await seenFrom('first@rcpt.test')).to.deep.equal({ remote: '127.0.0.1', ehlo: 'default.pools.test' });
  });

  it('an organization’s pool: the MX sees its address and EHLO name (never the default connection reused)', async () => {
    const added = (await cli('pool add', { name: 'org-pool', ip: '127.0.0.2', ehlo: 'out2.pools.test' })) as {
      pool: { name: string };
    };
    expect(added.pool.name).to.equal('org-pool');
    await cli('pool assign', { pool: 'org-pool', org: pooled.organization.id });
    // The default address's connection to the same MX is idle and open: it must not carry this.
    await send(pooled, 'org.test', ['org@rcpt.test']);
    expect(await seenFrom('org@rcpt.test')).to.deep.equal({ remote: '127.0.0.2', ehlo: 'out2.pools.test' });
    await send(plain, 'plain.test', ['again@rcpt.test']);
    expect(await seenFrom('again@rcpt.test')).to.deep.equal({ remote: '127.0.0.1', ehlo: 'default.pools.test' });
    // Attempts are counted under the pool's name (`default` without one).
    await waitFor('attempts counted per pool', async () => {
      await deps.prom.flush();
      const fields = Object.keys(await deps.redis.hgetall(deps.redisKeys.prom));
      const attempts = (pool: string) => `tern_delivery_attempts_total["delivered","other","${pool}"]`;
      return fields.includes(attempts('org-pool')) && fields.includes(attempts('default'));
    });
  });

  it('a domain’s pool wins over its organization’s; the organization’s other domain keeps the org pool', async () => {
    await cli('pool add', { name: 'domain-pool', ip: '127.0.0.3', ehlo: 'out3.pools.test' });
    await cli('pool assign', { pool: 'domain-pool', domain: 'own.test' });
    await send(pooled, 'own.test', ['own@rcpt.test']);
    await send(pooled, 'org.test', ['org2@rcpt.test']);
    expect(await seenFrom('own@rcpt.test')).to.deep.equal({ remote: '127.0.0.3', ehlo: 'out3.pools.test' });
    expect(await seenFrom('org2@rcpt.test')).to.deep.equal({ remote: '127.0.0.2', ehlo: 'out2.pools.test' });
  });

  it('a stream’s pool carries that stream of organizations without a pool of their own', async () => {
    await cli('pool add', { name: 'bulk', ip: '127.0.0.4' });
    await cli('pool assign', { pool: 'bulk', stream: 'broadcast' });
    await send(plain, 'plain.test', ['news@rcpt.test'], 'broadcast');
    await send(plain, 'plain.test', ['reset@rcpt.test']);
    // No EHLO name of its own: HELO_NAME.
    expect(await seenFrom('news@rcpt.test')).to.deep.equal({ remote: '127.0.0.4', ehlo: 'default.pools.test' });
    expect(await seenFrom('reset@rcpt.test')).to.deep.equal({ remote: '127.0.0.1', ehlo: 'default.pools.test' });
    // The org pool wins over the stream's.
    await send(pooled, 'org.test', ['orgnews@rcpt.test'], 'broadcast');
    expect((await seenFrom('orgnews@rcpt.test')).remote).to.equal('127.0.0.2');
  });

  it('paces providers per address: each pool address has its own bucket', async () => {
    const keys = await deps.redis.keys(`${deps.redisKeys.providerBucket('other')}*`);
    expect(keys).to.include.members([
      deps.redisKeys.providerBucket('other'),
      deps.redisKeys.providerBucket('other', '127.0.0.2'),
      deps.redisKeys.providerBucket('other', '127.0.0.3'),
    ]);
    const throttle = new ProviderThrottle(deps.redis, deps.redisKeys, DEFAULT_THROTTLE);
    await throttle.slow('gmail', '127.0.0.2');
    expect(await throttle.rate('gmail', '127.0.0.2')).to.be.below(DEFAULT_THROTTLE.maxRate);
    expect(await throttle.rate('gmail', '127.0.0.3')).to.equal(DEFAULT_THROTTLE.maxRate);
    expect(await throttle.rate('gmail')).to.equal(DEFAULT_THROTTLE.maxRate);
  });

  it('an address over its warm-up cap defers the excess to the next UTC day; an established domain skips its own ramp', async () => {
    const own = pooled.domains['own.test']!;
    const key = await pooled.mint({ permission: 'ADMIN' });
    // The domain is on day 0 of its ramp (50 a day) and has sent 60 today: nothing more may go...
    await api.deps.sql`update domains set verified_at = now() where id = ${own.id}`;
    const day = new Date().toISOString().slice(0, 10);
    const setCount = async (scope: string, n: number) =>
      await api.deps.sql`insert into sending_counts (scope, day, count) values (${scope}, ${day}::date, ${n})
                         on conflict (scope, day) do update set count = excluded.count`;
    await setCount(`dom:${own.id}`, 60);
    // ... while the address (day 0 as well: 50 a day) has room for two.
    await setCount('ip:127.0.0.3', 48);
    const held = await send(pooled, 'own.test', ['held@rcpt.test']);
    await waitFor('held by the domain ramp', async () =>
      (await status(held.recipients['held@rcpt.test']!)).wait_reason?.startsWith('over daily cap'),
    );

    // Marked established, the domain's ramp no longer applies; the address's does.
    const bad = await api.request('PATCH', `/domains/${own.id}`, { token: key.token, body: { warmup: 'no' } });
    expectError(bad, 422, 'validation_error');
    const patched = await api.request('PATCH', `/domains/${own.id}`, { token: key.token, body: { warmup: false } });
    expect(patched.status).to.equal(200);
    expect(patched.json.warmup).to.equal(false);
    expect((await api.request('GET', `/domains/${own.id}`, { token: key.token })).json.warmup).to.equal(false);

    const e = await send(pooled, 'own.test', ['w1@rcpt.test', 'w2@rcpt.test', 'w3@rcpt.test']);
    const rids = ['w1@rcpt.test', 'w2@rcpt.test', 'w3@rcpt.test'].map((a) => e.recipients[a]!);
    const settled = await waitFor('two delivered, one held', async () => {
      const all = await Promise.all(rids.map(status));
      const delivered = all.filter((r) => r.status === 'delivered').length;
      const waiting = all.filter((r) => r.status === 'queued' && r.wait_reason?.startsWith('over daily cap'));
      return delivered === 2 && waiting.length === 1 ? waiting[0]! : null;
    });
    const midnight = new Date(Math.floor(Date.now() / 86_400_000 + 1) * 86_400_000).toISOString();
    expect(settled.wait_reason).to.equal(`over daily cap until ${midnight}`);
    const [count] = await api.deps.sql<{ count: number }[]>`
      select count from sending_counts where scope = 'ip:127.0.0.3' and day = ${day}::date`;
    expect(count!.count).to.equal(50);
    for (const to of ['w1@rcpt.test', 'w2@rcpt.test', 'w3@rcpt.test']) {
      const got = sink.received.find((r) => r.rcptTo.includes(to));
      if (got) expect(sessions.get(got.session)!.remote).to.equal('127.0.0.3');
    }
    expect(sink.received.filter((r) => rids.some((_, i) => r.rcptTo.includes(`w${i + 1}@rcpt.test`)))).to.have.length(
      2,
    );
  });

  it('the addresses of a pool share its traffic, each within its own warm-up cap', async () => {
    const day = new Date().toISOString().slice(0, 10);
    await cli('pool add', { name: 'pair', ip: '127.0.0.5,127.0.0.6', ehlo: 'pair.pools.test' });
    await cli('pool assign', { pool: 'pair', domain: 'plain.test' });
    // One message at a time gets room on both: each address has one left for today.
    for (const a of ['127.0.0.5', '127.0.0.6']) {
      await api.deps.sql`insert into sending_counts (scope, day, count) values (${`ip:${a}`}, ${day}::date, 49)`;
    }
    const e = await send(plain, 'plain.test', ['p1@rcpt.test', 'p2@rcpt.test', 'p3@rcpt.test']);
    const rids = Object.values(e.recipients);
    await waitFor('two delivered, one held', async () => {
      const all = await Promise.all(rids.map(status));
      return (
        all.filter((r) => r.status === 'delivered').length === 2 &&
        all.filter((r) => r.wait_reason?.startsWith('over daily cap')).length === 1
      );
    });
    const sources = sink.received
      .filter((r) => ['p1@rcpt.test', 'p2@rcpt.test', 'p3@rcpt.test'].includes(r.rcptTo[0]!))
      .map((r) => sessions.get(r.session)!);
    expect(sources.map((s) => s.remote).sort()).to.deep.equal(['127.0.0.5', '127.0.0.6']);
    expect(sources.map((s) => s.ehlo)).to.deep.equal(['pair.pools.test', 'pair.pools.test']);
    await cli('pool unassign', { domain: 'plain.test' });
  });

  it('the SPF record names the addresses of the pools that can carry the domain’s mail', async () => {
    const key = await pooled.mint({ permission: 'ADMIN' });
    const plainKey = await plain.mint({ permission: 'ADMIN' });
    const spf = (d: { records: { record: string; value: string }[] }) => d.records.find((r) => r.record === 'SPF')!;
    // A new domain of the pooled org: the org pool's address.
    const created = await api.request('POST', '/domains', { token: key.token, body: { name: 'new.test' } });
    expect(created.status).to.equal(201);
    expect(spf(created.json).value).to.equal(`v=spf1 a:${MX_HOST} ip4:127.0.0.2 ~all`);
    // The domain pool wins: only its address.
    await cli('pool assign', { pool: 'domain-pool', domain: 'new.test' });
    const shown = await api.request('GET', `/domains/${created.json.id as string}`, { token: key.token });
    expect(spf(shown.json).value).to.equal(`v=spf1 a:${MX_HOST} ip4:127.0.0.3 ~all`);
    // An org without a pool: the stream pools' addresses (either stream may carry its mail).
    await cli('pool add', { name: 'v6', ip: '::1' });
    await cli('pool assign', { pool: 'v6', stream: 'transactional' });
    const other = await api.request('POST', '/domains', { token: plainKey.token, body: { name: 'other.test' } });
    expect(spf(other.json).value).to.equal(`v=spf1 a:${MX_HOST} ip4:127.0.0.4 ip6:::1 ~all`);
    const list = await api.request('GET', '/domains', { token: plainKey.token });
    const listed = (list.json.data as { name: string; records: { record: string; value: string }[] }[]).find(
      (d) => d.name === 'other.test',
    )!;
    expect(spf(listed).value).to.equal(`v=spf1 a:${MX_HOST} ip4:127.0.0.4 ip6:::1 ~all`);
    await cli('pool unassign', { stream: 'transactional' });
  });

  it('verification wants every pool address in the published SPF record', async () => {
    const key = await pooled.mint({ permission: 'ADMIN' });
    const created = await api.request('POST', '/domains', { token: key.token, body: { name: 'spf.test' } });
    type Rec = {
      record: string;
      name: string;
      type: string;
      value: string;
      priority?: number;
      status: string;
      reason?: string;
    };
    const records = created.json.records as Rec[];
    const spf = records.find((r) => r.record === 'SPF')!;
    expect(spf.value).to.equal(`v=spf1 a:${MX_HOST} ip4:127.0.0.2 ~all`);
    for (const r of records) {
      if (r.type === 'MX') dns.mx(r.name, [{ exchange: r.value, priority: r.priority! }]);
      else if (r.record !== 'SPF') dns.txt(r.name, [r.value]);
    }
    // An SPF record without the pool's address fails, naming what is missing.
    dns.txt(spf.name, [`v=spf1 a:${MX_HOST} ~all`]);
    const verify = async () =>
      (await api.request('POST', `/domains/${created.json.id as string}/verify`, { token: key.token })).json as {
        status: string;
        records: Rec[];
      };
    const failed = await verify();
    expect(failed.status).to.equal('failed');
    expect(failed.records.find((r) => r.record === 'SPF')).to.include({
      status: 'failed',
      reason: 'The SPF record at bounces.spf.test does not authorise ip4:127.0.0.2',
    });
    dns.txt(spf.name, [spf.value]);
    const ok = await verify();
    expect(ok.status).to.equal('verified');
    // The org's pool changes: the record is shown with the new address, to be verified again.
    await cli('pool add', { name: 'org-pool', ip: '127.0.0.7' });
    const shown = await api.request('GET', `/domains/${created.json.id as string}`, { token: key.token });
    expect(shown.json.status).to.equal('verified');
    expect((shown.json.records as Rec[]).find((r) => r.record === 'SPF')).to.include({
      value: `v=spf1 a:${MX_HOST} ip4:127.0.0.2 ip4:127.0.0.7 ~all`,
      status: 'pending',
      reason: 'The addresses of the IP pools changed: publish this value and verify again',
    });
  });
});
