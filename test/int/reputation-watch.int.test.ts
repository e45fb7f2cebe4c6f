// The reputation watch (DESIGN §20) against a DNS server of the test that lists and delists: two
// addresses of a pool assigned to the organization are looked up in RBL_ZONES and its verified
// domain in DBL_ZONES. A listing fires ip.listed / domain.listed to the webhook (with the zone's
// answer), sets tern_rbl_listed, shows in the console and takes the address out of its pool's
// rotation while the pool has another; a 127.255.255.x answer is unknown and lists nothing;
// `tern rbl check --json` run as an operator runs it sees the delisting, which fires
// ip.delisted / domain.delisted and puts the addresses back.
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { addPool, assignPool, POOL_OF_EMAIL_SQL } from '../../shared/db/ip-pools.js';
import { checkReputation } from '../../shared/reputation/watch.js';
import { createLogger } from '../../shared/logger.js';
import { watchWhenDue } from '../../workers/reputation-watch.js';
import { ConsoleClient } from '../helpers/console.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { scrape } from '../helpers/prometheus.js';
import { insertTrackedMessage } from '../helpers/tracking-rows.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import type { WorkerDeps } from '../../workers/deps.js';

const PROM_TOKEN = 'prometheus-test-token-0123456789';
const LISTED = '10.2.0.192.zen.test';
const OTHER = '11.2.0.192.zen.test';
const DOMAIN = 'acme.test.dbl.test';

describe('reputation watch', function () {
  this.timeout(300_000); // `tern rbl check` starts a process that loads the CLI from source
  let dns: TestDns;
  let s: WebhookStack;
  let deps: WorkerDeps;
  let emailId: string;
  let env: Record<string, string>;

  before(async () => {
    dns = await startDns();
    env = { RBL_ZONES: 'zen.test', DBL_ZONES: 'dbl.test', DNS_SERVERS: dns.server, PROMETHEUS_TOKEN: PROM_TOKEN };
    s = await startWebhookStack({ env });
    deps = workerDepsFor(s.api, env);
    await s.createWebhook({
      url: `${s.receiver.url}/reputation`,
      events: ['ip.listed', 'ip.delisted', 'domain.listed', 'domain.delisted'],
    });
    const poolId = await addPool(s.api.deps.sql, { name: 'bulk', ehlo: null, addresses: ['192.0.2.10', '192.0.2.11'] });
    await assignPool(s.api.deps.sql, poolId, { org_id: s.org.organization.id });
    const m = await insertTrackedMessage(s.api.deps.sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
      domainName: 'acme.test',
      recipient: 'someone@example.com',
    });
    emailId = m.emailId;
  });
  after(async () => {
    await deps?.close();
    await s?.close();
    await dns?.close();
  });

  const hooks = (type: string) =>
    s.receiver.received
      .filter((r) => r.path === '/reputation' && r.headers['tern-event-type'] === type)
      .map((r) => JSON.parse(r.raw.toString('utf8')).data);
  const rotation = async () => {
    const [row] = await s.api.deps.sql<{ pool: { addresses: { address: string }[] } }[]>`
      select ${s.api.deps.sql.unsafe(POOL_OF_EMAIL_SQL)} as pool
      from emails e join domains d on d.id = e.domain_id where e.id = ${emailId}`;
    return row!.pool.addresses.map((a) => a.address);
  };
  const check = () => checkReputation({ ...deps, logger: createLogger('silent', 'test') });
  const org = () => s.org.organization.id;

  it('a listing fires ip.listed, sets the gauge, shows in the console and leaves rotation; 127.255.255.x is unknown', async () => {
    dns.a(LISTED, ['127.0.0.2']);
    dns.a(DOMAIN, ['127.255.255.254']);
    expect(await watchWhenDue(deps)).to.equal(true);
    expect(await watchWhenDue(deps)).to.equal(false); // the next is RBL_CHECK_MINUTES away
    expect(dns.asked(LISTED)).to.equal(1);
    expect(dns.asked(OTHER)).to.equal(1);

    await s.receiver.waitForRequests(1, (r) => r.path === '/reputation');
    expect(hooks('ip.listed')).to.deep.equal([
      { organization_id: org(), ip: '192.0.2.10', pool: 'bulk', zones: [{ zone: 'zen.test', answer: '127.0.0.2' }] },
    ]);
    const [domain] = await s.api.deps.sql`select * from rbl_checks where kind = 'domain'`;
    expect(domain).to.include({ target: 'acme.test', zone: 'dbl.test', status: 'unknown', listed: false });
    expect(await rotation()).to.deep.equal(['192.0.2.11']);

    const m = await scrape(s.api.url, PROM_TOKEN);
    expect(m.types.get('tern_rbl_listed')).to.equal('GAUGE');
    expect(m.sum('tern_rbl_listed', { kind: 'ip', target: '192.0.2.10', zone: 'zen.test' })).to.equal(1);
    expect(m.select('tern_rbl_listed', { kind: 'ip', target: '192.0.2.11' })[0]!.value).to.equal(0);
    expect(m.sum('tern_rbl_listed', { kind: 'domain' })).to.equal(0);

    const c = new ConsoleClient(s.api.url);
    expect((await c.login(s.org.user.email, s.org.user.password)).status).to.equal(303);
    const overview = await c.get('/console');
    expect(overview.text).to.contain('data-rbl-listed="1"').and.contain('192.0.2.10');
    const page = await c.get('/console/reputation');
    expect(page.status).to.equal(200);
    expect(page.text).to.match(/<h1[^>]*>\s*Reputation\s*</);
    expect(page.text).to.match(/data-rbl-target="192.0.2.10" data-rbl-zone="zen.test">[\s\S]*?data-state="listed"/);
    expect(page.text).to.match(/data-rbl-target="acme.test" data-rbl-zone="dbl.test">[\s\S]*?data-state="unknown"/);
  });

  it('a domain listing fires domain.listed; a pool with every address listed keeps sending from them', async () => {
    dns.a(OTHER, ['127.0.0.3']);
    dns.a(DOMAIN, ['127.0.1.2']);
    await check();
    await s.receiver.waitForRequests(3, (r) => r.path === '/reputation');
    expect(hooks('domain.listed')).to.deep.equal([
      {
        organization_id: org(),
        domain_id: s.org.domains['acme.test']!.id,
        domain: 'acme.test',
        zones: [{ zone: 'dbl.test', answer: '127.0.1.2' }],
      },
    ]);
    expect(hooks('ip.listed').map((d) => d.ip)).to.deep.equal(['192.0.2.10', '192.0.2.11']);
    expect(await rotation()).to.deep.equal(['192.0.2.10', '192.0.2.11']);
    // An unknown answer keeps the verdict: nothing is delisted.
    dns.a(OTHER, ['127.255.255.252']);
    await check();
    const [other] = await s.api.deps.sql`select * from rbl_checks where target = '192.0.2.11'`;
    expect(other).to.include({ status: 'unknown', listed: true });
    expect(hooks('ip.delisted')).to.deep.equal([]);
  });

  it('`tern rbl check --json` sees the delisting: ip.delisted, domain.delisted, back in rotation', async () => {
    dns.remove(LISTED);
    dns.remove(OTHER);
    dns.remove(DOMAIN);
    const run = await tern(['rbl', 'check', '--json']);
    expect(run.code, run.stderr).to.equal(0);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    // The host's own public addresses (if this machine has any) are checked too: not the subject here.
    const host = out.checks.filter((c: { kind: string; pool: string | null }) => c.kind === 'ip' && c.pool === null);
    for (const h of host) expect(h.listed).to.equal(false);
    expect(out.checks.filter((c: object) => !host.includes(c))).to.deep.equal([
      {
        kind: 'domain',
        target: 'acme.test',
        pool: null,
        listed: false,
        zones: [{ zone: 'dbl.test', status: 'clear', answer: null }],
      },
      {
        kind: 'ip',
        target: '192.0.2.10',
        pool: 'bulk',
        listed: false,
        zones: [{ zone: 'zen.test', status: 'clear', answer: null }],
      },
      {
        kind: 'ip',
        target: '192.0.2.11',
        pool: 'bulk',
        listed: false,
        zones: [{ zone: 'zen.test', status: 'clear', answer: null }],
      },
    ]);
    // The CLI records the events; the fan-out's timer sends them.
    await s.receiver.waitForRequests(6, (r) => r.path === '/reputation');
    expect(hooks('ip.delisted')).to.have.deep.members([
      { organization_id: org(), ip: '192.0.2.10', pool: 'bulk' },
      { organization_id: org(), ip: '192.0.2.11', pool: 'bulk' },
    ]);
    expect(hooks('domain.delisted')).to.deep.equal([
      { organization_id: org(), domain_id: s.org.domains['acme.test']!.id, domain: 'acme.test' },
    ]);
    expect(await rotation()).to.deep.equal(['192.0.2.10', '192.0.2.11']);
    const listed = await s.api.deps.sql`select address from ip_pool_addresses where listed_at is not null`;
    expect(listed).to.have.length(0);
    const m = await scrape(s.api.url, PROM_TOKEN);
    expect(m.sum('tern_rbl_listed')).to.equal(0);
  });

  function tern(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'api/cli/tern.ts', ...args], {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: s.api.db.url,
          REDIS_URL: s.api.config.redisUrl,
          REDIS_PREFIX: s.api.config.redisPrefix,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }
});
