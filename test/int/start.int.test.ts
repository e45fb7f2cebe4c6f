// `npm start` end to end: the launcher run from source (tsx) on an empty database, its banner read
// as a new user reads it (DESIGN §12 order), its three printed lines run as printed, a second run
// on the same data, and the CLI finding npm start's services through .data/.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import postgres from 'postgres';
import { portAnswers } from '../../api/cli/start/services.js';
import { ADMIN_URL, dbUrl } from '../helpers/db.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { httpGet, launch, printedLine, waitForOutput, waitForRecipients, type Launch } from '../helpers/launcher.js';
import { freePort } from '../helpers/ports.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { clearPrefix, TEST_REDIS_URL, testPrefix } from '../helpers/redis-prefix.js';

function tern(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/cli/tern.ts', ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Each marker appears, in this order. */
function expectInOrder(out: string, markers: string[]): void {
  let at = -1;
  for (const m of markers) {
    const i = out.indexOf(m, at + 1);
    expect(i, `"${m}" after position ${at} in:\n${out}`).to.be.greaterThan(at);
    at = i;
  }
}

describe('npm start', function () {
  this.timeout(120_000);
  const dbName = `tern_start_${randomBytes(5).toString('hex')}`;
  let dataDir: string;
  let admin: postgres.Sql;
  let baseEnv: Record<string, string>;
  let dns: TestDns;
  let mx: Sink;

  before(async () => {
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${dbName}"`);
    dataDir = await mkdtemp(join(tmpdir(), 'tern-data-'));
    await chmod(dataDir, 0o755);
    // The outbound probe asks this DNS for gmail.com's MX and finds a local SMTP server on
    // OUTBOUND_PORT: "direct to MX", and no packet leaves the machine.
    dns = await startDns();
    mx = await startSink();
    dns.mx('gmail.com', [{ exchange: '127.0.0.1', priority: 5 }]);
    baseEnv = {
      DATABASE_URL: dbUrl(dbName),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: testPrefix(),
      TERN_DATA_DIR: dataDir,
      DNS_SERVERS: dns.server,
      OUTBOUND_PORT: String(mx.port),
    };
  });
  after(async () => {
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
    await mx.close();
    await dns.close();
    await clearPrefix(baseEnv.REDIS_PREFIX!);
  });

  async function ports() {
    const [port, relayPort, mxPort] = [await freePort(), await freePort(), await freePort()];
    return { PORT: String(port), RELAY_PORT: String(relayPort), MX_PORT: String(mxPort) };
  }

  async function stop(l: Launch, port: string): Promise<void> {
    l.child.kill('SIGTERM');
    const { code, signal } = await l.exited;
    expect({ code, signal }, l.output()).to.deep.equal({ code: 0, signal: null });
    expect(await portAnswers(Number(port)), 'the web process is gone').to.equal(false);
  }

  it('first run: prints the banner in order, and its curl, SDK and relay lines send test mail that is delivered with readable MIME', async () => {
    const p = await ports();
    const l = launch({ ...baseEnv, ...p });
    try {
      await waitForOutput(l, 'Ctrl-C stops it.');
      const out = l.output();
      const api = `http://localhost:${p.PORT}/api/v1`;
      expectInOrder(out, [
        `API         ${api}`,
        `Console     http://localhost:${p.PORT}/console`,
        `SMTP relay  localhost:${p.RELAY_PORT}`,
        `MX          localhost:${p.MX_PORT}`,
        `Metrics     http://localhost:${p.PORT}/metrics`,
        'Console login  demo@tern.local  password: ',
        'ADMIN key  key_',
        'Test key   key_',
        `Delivery     direct to MX (port ${mx.port} reachable: 127.0.0.1:${mx.port} answered EHLO)`,
        'Development conveniences (npm start only',
        `SECRET_KEY generated once and kept in ${dataDir}/secret`,
        'private webhook targets allowed (WEBHOOK_ALLOW_PRIVATE=true)',
        'GET /metrics and /healthz?verbose=1 open without a token (PROMETHEUS_PUBLIC=true)',
        'demo organization with the domain demo.test',
        '# curl',
        '# the resend SDK',
        '# the SMTP relay',
        'Ctrl-C stops it.',
      ]);
      const [, keyId, token] = /Test key {3}(key_\w+) {2}(tern_test_\w+)/.exec(out)!;
      const live = /ADMIN key {2}key_\w+ {2}(tern_live_\w+)/.exec(out)?.[1];
      expect(live, out).to.be.a('string');
      const refused = await fetch(`http://127.0.0.1:${p.PORT}/api/v1/emails`, {
        method: 'POST',
        headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'hello@demo.test', to: 'you@example.com', subject: 'x', text: 'y' }),
      });
      expect(refused.status).to.equal(422);
      const error = ((await refused.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).to.equal('demo_domain');
      expect(error.message).to.contain('only test keys send from it').and.to.contain('add a domain you own');

      const sdk = await l.sh(printedLine(out, 'the resend SDK'));
      const id = /id: '(em_\w+)'/.exec(sdk.out)?.[1];
      expect(id, sdk.out).to.be.a('string');
      const email = await waitForRecipients(l, api, token!, id!, 'delivered');
      expect(email.raw_url).to.equal(`${api}/emails/${id}/raw`);
      const raw = await httpGet(l, email.raw_url, token!);
      expect(raw.status).to.equal(200);
      expect(raw.headers['content-type']).to.equal('message/rfc822');
      expect(raw.headers['tern-raw-source']).to.equal('stored');
      expect(raw.body).to.match(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=demo\.test;/);
      expect(raw.body).to.contain('Subject: Hello from Tern').and.to.contain(`Message-ID: <${id}@demo.test>`);

      const curl = await l.sh(printedLine(out, 'curl'));
      expect(JSON.parse(curl.out).id, curl.out).to.match(/^em_/);
      const relay = await l.sh(printedLine(out, 'the SMTP relay'));
      expect(relay.out, relay.out).to.match(/^250 2\.0\.0 Ok: queued as em_\w+/);
      // Open without a token under the launcher: the SDK's and curl's sends are counted.
      const scraped = await fetch(`http://127.0.0.1:${p.PORT}/metrics`);
      expect(scraped.status).to.equal(200);
      expect(await scraped.text()).to.contain('tern_emails_accepted_total{source="api",stream="transactional"} 2');
      expect(keyId).to.match(/^key_/);
      expect(mx.received, 'test mail never reaches a server').to.have.length(0);

      // The CLI in the checkout finds npm start's Postgres through .data/env.
      const orgId = /--org (org_\w+)/.exec(out)?.[1] ?? (/"Demo" \((org_\w+)\)/.exec(out)?.[1] as string);
      // and its Redis and key prefix: a domain the CLI adds is usable at once (the web processes'
      // caches hear of it), with no variable repeated on the CLI's command line.
      const minted = await tern(['key', 'mint', '--org', orgId, '--permission', 'SEND', '--mode', 'test', '--json'], {
        TERN_DATA_DIR: dataDir,
      });
      expect(minted.code, minted.out).to.equal(0);
      expect(minted.out).to.match(/"token":"tern_test_/);
      const recorded = await readFile(join(dataDir, 'env'), 'utf8');
      expect(recorded).to.contain(`DATABASE_URL=${baseEnv.DATABASE_URL}`);
      expect(recorded).to.contain(`REDIS_PREFIX=${baseEnv.REDIS_PREFIX}`);
      const added = await tern(['domain', 'add', '--org', orgId, '--name', 'fresh.test', '--verified'], {
        TERN_DATA_DIR: dataDir,
      });
      expect(added.code, added.out).to.equal(0);
      expect(added.out).not.to.contain('could not be told');
      const fromNew = await fetch(`http://127.0.0.1:${p.PORT}/api/v1/emails`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'hello@fresh.test', to: 'you@example.com', subject: 'x', text: 'y' }),
      });
      expect(fromNew.status, await fromNew.clone().text()).to.equal(200);
      await stop(l, p.PORT);
    } finally {
      await l.close();
    }
  });

  it('stores the demo domain verified, flagged demo, with a DKIM key', async () => {
    const sql = postgres(dbUrl(dbName), { max: 1, onnotice: () => {} });
    try {
      const [d] = await sql<{ demo: boolean; status: string; dkim_private_key: string | null }[]>`
        select demo, status, dkim_private_key from domains where name = 'demo.test'`;
      expect(d).to.include({ demo: true, status: 'verified' });
      // Sealed with the SECRET_KEY npm start generated (docs/operations.md "Secrets at rest").
      expect(d!.dkim_private_key).to.match(/^v1:[0-9a-f]{8}:/);
      expect(d!.dkim_private_key).not.to.contain('PRIVATE KEY');
    } finally {
      await sql.end();
    }
  });

  it('later runs: no keys, how to mint one, the smarthost with its password hidden, and only the conveniences in effect', async () => {
    const smarthost = await startSink(() => null, {
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      onAuth: (auth, _s, cb) => cb(null, { user: auth.username }),
    });
    const p = await ports();
    const l = launch({
      ...baseEnv,
      ...p,
      SMTP_SMARTHOST: `smtp://relayuser:s3cret-pw@127.0.0.1:${smarthost.port}`,
      WEBHOOK_ALLOW_PRIVATE: 'false',
      PROMETHEUS_TOKEN: 'launcher-test-metrics-token',
    });
    try {
      await waitForOutput(l, 'Ctrl-C stops it.');
      const out = l.output();
      expect(out)
        .not.to.contain('First run')
        .and.not.to.match(/tern_(test|live)_/);
      expect(out).to.match(/key mint --org org_\w+ --permission SEND --mode test/);
      expect(out).to.contain(
        'Console login  demo@tern.local  (its password was shown on the first run; a new one: npm run tern -- user reset-password --email demo@tern.local)',
      );
      expect(out).to.contain(`Delivery     smarthost smtp://relayuser:***@127.0.0.1:${smarthost.port} (answered EHLO)`);
      expect(out).not.to.contain('s3cret-pw');
      expect(out).not.to.contain('WEBHOOK_ALLOW_PRIVATE=true');
      expect(out).not.to.contain('PROMETHEUS_PUBLIC=true');
      const metrics = (token?: string) =>
        fetch(`http://127.0.0.1:${p.PORT}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      expect((await metrics()).status).to.equal(401);
      expect((await metrics('launcher-test-metrics-token')).status).to.equal(200);
      expect(out).not.to.contain('# curl');
      await stop(l, p.PORT);
    } finally {
      await l.close();
      await smarthost.close();
    }
  });

  it('on a machine where no Postgres or Redis answers, starts embedded ones under .data/', async function () {
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-n', 'true']).status !== 0) this.skip();
    const dir = await mkdtemp(join(tmpdir(), 'tern-iso-'));
    await chmod(dir, 0o755);
    const l = launch({ TERN_DATA_DIR: dir, PORT: '3000' }, { isolated: true });
    try {
      await waitForOutput(l, 'Ctrl-C stops it.');
      const out = l.output();
      expect(out).to.match(/Postgres: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/tern \(embedded\)/);
      expect(out).to.match(/Redis: redis:\/\/127\.0\.0\.1:\d+ \(embedded\)/);
      expect(out)
        .to.contain('created database tern')
        .and.to.match(/Test key {3}key_\w+ {2}tern_test_/)
        .and.to.contain('Delivery     test keys only: no outbound SMTP here')
        .and.to.contain(`embedded Postgres on 127.0.0.1:54320 (data in ${dir}/postgres)`)
        .and.to.contain(`embedded Redis on 127.0.0.1:63790 (data in ${dir}/redis)`);
      l.child.kill('SIGINT');
      const { code } = await l.exited;
      expect(code, l.output()).to.equal(0);
      expect(existsSync(join(dir, 'postgres', 'postmaster.pid')), 'embedded Postgres stopped').to.equal(false);
    } finally {
      await l.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stops everything and exits 1 naming the process that died (web cannot listen)', async () => {
    const blocker: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const l = launch({ ...baseEnv, ...(await ports()), PORT: String(port) });
      try {
        const { code } = await l.exited;
        expect(code, l.output()).to.equal(1);
        expect(l.output()).to.match(/web exited unexpectedly \(code 1\): stopping the others/);
        expect(l.output(), 'not a first run any more').not.to.contain('password: ');
      } finally {
        await l.close();
      }
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
