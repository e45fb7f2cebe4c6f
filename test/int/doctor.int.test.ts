// `tern doctor` (DESIGN §15) run as an operator runs it, against local stand-ins for the world:
// a DNS server (zones, PTR), an SMTP listener as the MX on OUTBOUND_PORT or as the smarthost,
// private redis-servers with good and bad settings, certificate files, and the test database.
// A good set-up exits 0 with every check ok; warnings exit 1; failures exit 2, each naming a fix.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { generate } from 'selfsigned';
import { redisAnswers } from '../../api/cli/start/services.js';
import { provisionDomain } from '../../shared/domains/setup.js';
import type { DomainRecord } from '../../shared/domains/records.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { freePort } from '../helpers/ports.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix: string | null;
}

const HOST = 'mail.example.test';

function doctor(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/cli/tern.ts', 'doctor', ...args], {
      env: { PATH: process.env.PATH, TERN_DATA_DIR: '/nonexistent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const checksOf = (out: string): Check[] => (JSON.parse(out.trim().split('\n').pop()!) as { checks: Check[] }).checks;
const byName = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check "${name}" in ${checks.map((x) => x.name).join(', ')}`);
  return c;
};

async function startRedis(dir: string, args: string[]): Promise<{ url: string; close: () => Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', ...args],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = track(`redis-server ${port}`, async () => {
    child.kill('SIGKILL');
    await exited;
  });
  await waitFor('the private redis-server to answer', () => redisAnswers(port));
  return { url: `redis://127.0.0.1:${port}`, close };
}

async function certificate(dir: string, name: string, notBefore: Date, notAfter: Date) {
  const pems = await generate([{ name: 'commonName', value: HOST }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: notAfter,
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: HOST }] }],
  });
  await writeFile(join(dir, `${name}.crt`), pems.cert);
  await writeFile(join(dir, `${name}.key`), pems.private);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** Publishes a domain's records as issued (DKIM with the stored key), minus the kinds left out. */
function publish(dns: TestDns, records: DomainRecord[], skip: string[] = []): void {
  for (const r of records.filter((x) => !skip.includes(x.record))) {
    if (r.type === 'TXT') dns.txt(r.name, [r.value]);
    else dns.mx(r.name, [{ exchange: r.value, priority: r.priority ?? 10 }]);
  }
}

describe('tern doctor', function () {
  this.timeout(120_000);
  const DAY = 86_400_000;
  let api: TestApi;
  let org: SeededOrg;
  let dns: TestDns;
  let mx: Sink;
  let dir: string;
  let goodRedis: { url: string; close: () => Promise<void> };
  let badRedis: { url: string; close: () => Promise<void> };
  let good: Record<string, string>;
  let certs: Record<'good' | 'soon' | 'expired' | 'other', { cert: string; key: string }>;
  let usable: number;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql);
    dns = await startDns();
    mx = await startSink();
    dir = await mkdtemp(join(tmpdir(), 'tern-doctor-'));
    goodRedis = await startRedis(dir, ['--maxmemory-policy', 'noeviction', '--appendonly', 'yes', '--save', '']);
    badRedis = await startRedis(dir, ['--maxmemory-policy', 'allkeys-lru', '--appendonly', 'no', '--save', '']);
    const now = Date.now();
    certs = {
      good: await certificate(dir, 'good', new Date(now - DAY), new Date(now + 90 * DAY)),
      soon: await certificate(dir, 'soon', new Date(now - DAY), new Date(now + 5 * DAY)),
      expired: await certificate(dir, 'expired', new Date(now - 30 * DAY), new Date(now - DAY)),
      other: await certificate(dir, 'other', new Date(now - DAY), new Date(now + 90 * DAY)),
    };
    // The world as a good install sees it: the probe domain's MX answers on OUTBOUND_PORT, the
    // outbound address (127.0.0.1) has forward-confirmed reverse DNS naming the EHLO name.
    dns.mx('probe.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    dns.ptr('1.0.0.127.in-addr.arpa', [HOST]);
    dns.a(HOST, ['127.0.0.1']);
    const domain = await provisionDomain(
      api.deps.sql,
      { mxHost: HOST, secretKey: api.config.secretKey },
      { orgId: org.organization.id, name: 'good.test' },
    );
    publish(dns, domain.records as DomainRecord[]);
    await api.deps.sql`update domains set track_clicks = true where id = ${domain.id}`;
    const [row] = await api.deps.sql<{ max: number; reserved: number }[]>`
      select current_setting('max_connections')::int as max, current_setting('superuser_reserved_connections')::int as reserved`;
    usable = row!.max - row!.reserved;
    good = {
      DATABASE_URL: api.db.url,
      REDIS_URL: goodRedis.url,
      SECRET_KEY: randomBytes(36).toString('base64url'),
      BASE_URL: `https://${HOST}`,
      DNS_SERVERS: dns.server,
      OUTBOUND_PORT: String(mx.port),
      RELAY_TLS_CERT: certs.good.cert,
      RELAY_TLS_KEY: certs.good.key,
      MX_TLS_CERT: certs.good.cert,
      MX_TLS_KEY: certs.good.key,
      // The systemd units' folder (the check reads its path and file system; nothing is written).
      DELIVERY_JOURNAL_DIR: '/var/lib/tern/delivery-journal',
    };
  });
  after(async () => {
    await goodRedis.close();
    await badRedis.close();
    await mx.close();
    await dns.close();
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a good set-up: every check ok, exit 0', async () => {
    const r = await doctor(['--json', '--probe-domain', 'probe.test'], good);
    const checks = checksOf(r.out);
    expect(r.code, r.out + r.err).to.equal(0);
    expect(checks.filter((c) => c.status !== 'ok')).to.deep.equal([]);
    expect(checks.every((c) => c.fix === null)).to.equal(true);
    expect(checks.map((c) => c.name)).to.include.members([
      'SECRET_KEY',
      'BASE_URL',
      'TLS relay',
      'TLS MX',
      'outbound SMTP',
      'reverse DNS 127.0.0.1',
      'Redis maxmemory-policy',
      'Redis persistence',
      'Postgres version',
      'Postgres max_connections',
      'domain good.test: SPF',
      'domain good.test: DKIM',
      'domain good.test: DMARC',
      'domain good.test: MX reply.good.test',
      'domain good.test: MX bounces.good.test',
      'domain good.test: tracking',
    ]);
    expect(byName(checks, 'outbound SMTP').message).to.equal(`direct to MX: 127.0.0.1:${mx.port} answered EHLO`);
    expect(byName(checks, 'reverse DNS 127.0.0.1').message).to.contain(`127.0.0.1 ↔ ${HOST}`);
    expect(byName(checks, 'Redis persistence').message).to.contain('AOF on');
    expect(byName(checks, 'TLS relay').message).to.contain('key matches');
  });

  it('warnings only: a certificate expiring within 14 days, no DMARC, RDB-only is fine, a crowded Postgres; exit 1', async () => {
    const domain = await provisionDomain(
      api.deps.sql,
      { mxHost: HOST, secretKey: api.config.secretKey },
      { orgId: org.organization.id, name: 'nodmarc.test' },
    );
    publish(dns, domain.records as DomainRecord[], ['DMARC']);
    const crowded = Math.floor((usable - 10) / 10); // processes whose pools nearly fill max_connections
    const r = await doctor(['--json', '--probe-domain', 'probe.test', '--scale', `web=${crowded - 3}`], {
      ...good,
      MX_TLS_CERT: certs.soon.cert,
      MX_TLS_KEY: certs.soon.key,
      SMTP_SMARTHOST: `smtp://127.0.0.1:${mx.port}/?tls_verify=false`,
    });
    const checks = checksOf(r.out);
    expect(r.code, r.out + r.err).to.equal(1);
    const warned = checks.filter((c) => c.status === 'warn').map((c) => c.name);
    expect(warned).to.have.members(['TLS MX', 'domain nodmarc.test: DMARC', 'Postgres max_connections']);
    expect(byName(checks, 'TLS MX').message).to.match(/expires on .* \(in [45] days\)/);
    expect(byName(checks, 'TLS MX').fix).to.contain('renew');
    expect(byName(checks, 'domain nodmarc.test: DMARC').fix).to.equal(
      'publish TXT _dmarc.nodmarc.test "v=DMARC1; p=none; rua=mailto:dmarc@bounces.nodmarc.test;", then run tern doctor again',
    );
    expect(byName(checks, 'outbound SMTP').message).to.equal(
      `smarthost smtp://127.0.0.1:${mx.port}/?tls_verify=false answered EHLO`,
    );
    expect(byName(checks, 'reverse DNS').message).to.contain('the smarthost sends the mail');
    await api.deps.sql`delete from domains where id = ${domain.id}`;
  });

  it('a bad set-up: each failure named with its fix, exit 2', async () => {
    const domain = await provisionDomain(
      api.deps.sql,
      { mxHost: HOST, secretKey: api.config.secretKey },
      { orgId: org.organization.id, name: 'bad.test' },
    );
    const records = domain.records as DomainRecord[];
    publish(dns, records, ['SPF', 'DKIM']);
    // Another key published than the one stored; the reply MX points elsewhere.
    dns.txt('tern._domainkey.bad.test', ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong']);
    dns.mx('reply.bad.test', [{ exchange: 'mx.elsewhere.test', priority: 10 }]);
    dns.ptr('1.0.0.127.in-addr.arpa', ['other.example.test']);
    const overfull = Math.floor((usable - 10) / 10) + 1;
    try {
      const r = await doctor(['--json', '--probe-domain', 'probe.test', '--scale', `web=${overfull - 3}`], {
        ...good,
        SECRET_KEY: 'short-secret',
        BASE_URL: 'http://nowhere.example.test',
        MX_HOST: HOST,
        REDIS_URL: badRedis.url,
        OUTBOUND_PORT: String(await freePort()),
        RELAY_TLS_KEY: certs.other.key,
        MX_TLS_CERT: certs.expired.cert,
        MX_TLS_KEY: certs.expired.key,
      });
      const checks = checksOf(r.out);
      expect(r.code, r.out + r.err).to.equal(2);
      const failed = checks.filter((c) => c.status === 'fail');
      expect(failed.map((c) => c.name)).to.have.members([
        'SECRET_KEY',
        'BASE_URL',
        'TLS relay',
        'TLS MX',
        'outbound SMTP',
        'reverse DNS 127.0.0.1',
        'Redis maxmemory-policy',
        'Redis persistence',
        'Postgres max_connections',
        'domain good.test: tracking',
        'domain bad.test: SPF',
        'domain bad.test: DKIM',
        'domain bad.test: MX reply.bad.test',
      ]);
      expect(failed.every((c) => typeof c.fix === 'string' && c.fix.length > 0)).to.equal(true);
      expect(byName(checks, 'SECRET_KEY').message).to.contain('at least 32');
      expect(byName(checks, 'TLS relay').message).to.equal(
        'RELAY_TLS_KEY is not the key of the certificate in RELAY_TLS_CERT',
      );
      expect(byName(checks, 'TLS MX').message).to.match(/^expired on /);
      expect(byName(checks, 'outbound SMTP').fix).to.contain('SMTP_SMARTHOST=');
      expect(byName(checks, 'reverse DNS 127.0.0.1').message).to.contain(
        'PTR is other.example.test, not the EHLO name',
      );
      expect(byName(checks, 'Redis maxmemory-policy').message).to.contain('allkeys-lru');
      expect(byName(checks, 'domain bad.test: DKIM').message).to.contain('another public key');
      expect(byName(checks, 'domain bad.test: SPF').fix).to.equal(
        `publish TXT bounces.bad.test "v=spf1 a:${HOST} ~all", then run tern doctor again`,
      );
      expect(byName(checks, 'domain bad.test: MX reply.bad.test').message).to.contain('mx.elsewhere.test');
      expect(byName(checks, 'domain good.test: tracking').message).to.contain(
        'nowhere.example.test, which does not resolve',
      );
      expect(byName(checks, 'domain bad.test: MX bounces.bad.test').status).to.equal('ok');
      expect(byName(checks, 'domain bad.test: tracking').status).to.equal('ok');

      // --domain: only that domain's checks, in the human format.
      const human = await doctor(['--domain', 'bad.test'], good);
      expect(human.code).to.equal(2);
      expect(human.out).to.match(/^FAIL {2}domain bad\.test: SPF +No TXT record found at bounces\.bad\.test$/m);
      expect(human.out).to.match(/^ +fix: publish TXT bounces\.bad\.test/m);
      expect(human.out).not.to.contain('good.test').and.not.to.contain('Redis');
      expect(human.out.trim().split('\n').pop()).to.match(/^\d+ ok, \d+ warnings, [1-9]\d* failures$/);
    } finally {
      dns.ptr('1.0.0.127.in-addr.arpa', [HOST]);
      await api.deps.sql`delete from domains where id = ${domain.id}`;
    }
  });

  it('--domain with a name the install does not have fails, exit 2; the demo domain needs no DNS', async () => {
    const r = await doctor(['--domain', 'nope.test', '--json'], good);
    expect(r.code).to.equal(2);
    expect(checksOf(r.out)).to.deep.equal([
      {
        name: 'domain nope.test',
        status: 'fail',
        message: 'no such domain on this install',
        fix: 'add it (POST /api/v1/domains or tern domain add)',
      },
    ]);
    await api.deps.sql`
      insert into domains (id, org_id, name, status, demo) values ('dom_demo', ${org.organization.id}, 'demo.test', 'verified', true)`;
    const demo = await doctor(['--domain', 'demo.test', '--json'], good);
    expect(demo.code).to.equal(0);
    expect(checksOf(demo.out)[0]!.message).to.contain('never leaves this machine');
  });

  it('refuses a bad --scale as a usage error (exit 2, no checks)', async () => {
    const r = await doctor(['--scale', 'db=3'], good);
    expect(r.code).to.equal(2);
    expect(r.err).to.contain('--scale: "db=3" is not process=count');
  });

  it('IP pools: each address bindable here with forward-confirmed reverse DNS naming the pool’s EHLO name', async () => {
    await api.deps
      .sql`insert into ip_pools (id, name, ehlo) values ('ipp_a', 'good', 'out.pool.test'), ('ipp_b', 'idle', null)`;
    await api.deps.sql`
      insert into ip_pool_addresses (address, pool_id)
      values ('127.0.0.2', 'ipp_a'), ('127.0.0.3', 'ipp_a'), ('192.0.2.55', 'ipp_b')`;
    await api.deps.sql`insert into ip_pool_assignments (pool_id, stream) values ('ipp_a', 'broadcast')`;
    dns.ptr('2.0.0.127.in-addr.arpa', ['out.pool.test']);
    dns.a('out.pool.test', ['127.0.0.2']);
    dns.ptr('3.0.0.127.in-addr.arpa', ['other.pool.test']);
    try {
      const checks = checksOf((await doctor(['--json', '--probe-domain', 'probe.test'], good)).out);
      expect(byName(checks, 'pool good 127.0.0.2')).to.include({ status: 'ok' });
      expect(byName(checks, 'reverse DNS 127.0.0.2')).to.include({
        status: 'ok',
        message: '127.0.0.2 ↔ out.pool.test (PTR and A agree with the EHLO name)',
      });
      expect(byName(checks, 'reverse DNS 127.0.0.3')).to.deep.include({
        status: 'fail',
        message: "PTR is other.pool.test, not the EHLO name out.pool.test (pool good's EHLO name)",
        fix:
          'ask whoever runs 127.0.0.3 (the hosting provider) to set its PTR record to out.pool.test, or ' +
          'tern pool add --name good --ip 127.0.0.3 --ehlo other.pool.test if that name resolves back to 127.0.0.3',
      });
      expect(byName(checks, 'pool idle')).to.include({
        status: 'warn',
        message: 'assigned to nothing: no mail leaves from it',
      });
      expect(byName(checks, 'pool idle 192.0.2.55')).to.include({
        status: 'fail',
        message: '192.0.2.55 cannot be bound on this host (EADDRNOTAVAIL)',
      });
    } finally {
      await api.deps.sql`delete from ip_pools`;
    }
  });
});
