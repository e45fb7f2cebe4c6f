// `npm start`: the development launcher (DESIGN §12): the whole of Tern in one process tree, for
// a laptop or a demo. It finds (or starts) Postgres and Redis, creates the database if needed,
// migrates, creates the demo organization on first run, then runs every Procfile process with the
// operator's environment plus the development conveniences it names in its banner (a generated
// SECRET_KEY, private webhook targets allowed, open monitoring routes, the embedded servers, the
// demo data).
// Stopping: the first SIGINT/SIGTERM sends SIGTERM to the processes and waits for them, then
// stops the embedded servers it started; a second signal kills everything at once. A process
// that dies on its own takes the others down and the launcher exits 1, naming it.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createDemoOrganization, type CreatedDemo } from '../../shared/bootstrap.js';
import { ConfigError, loadConfig, loadToolConfig, type Config } from '../../shared/config.js';
import { findDemoDomain, restoreDemoDomain } from '../../shared/db/domains.js';
import { migrate } from '../../shared/db/migrate.js';
import { sealStoredSecrets } from '../../shared/secrets-seal.js';
import { countOrgs } from '../../shared/db/orgs.js';
import { createPool } from '../../shared/db/pool.js';
import { probeOutbound, type ProbeResult } from '../../shared/mail/outbound/probe.js';
import { packageRoot } from '../../shared/paths.js';
import { secretBox } from '../../shared/secrets.js';
import { dataDir as dataDirOf, recordLauncherEnv } from './data-dir.js';
import { bannerLines } from './start/banner.js';
import { readProcfile, Supervisor } from './start/children.js';
import { ensureDatabase, resolvePostgres, resolveRedis, type Resolved } from './start/resolve.js';
import { MissingDependency, portAnswers, type Service } from './start/services.js';

const say = (line: string): void => void process.stdout.write(`tern | ${line}\n`);
const root = packageRoot();
const dataDir = dataDirOf();
const services: Service[] = [];
let supervisor: Supervisor | null = null;
let stage = 0;

type Env = Record<string, string | undefined>;

/** The console login of the demo organization. */
const DEMO_ADMIN = 'demo@tern.local';

/** SECRET_KEY as given, else the one generated into .data/secret on the first run. */
async function secretKey(conveniences: string[]): Promise<string> {
  if (process.env.SECRET_KEY) return process.env.SECRET_KEY;
  const file = `${dataDir}/secret`;
  const existing = (await readFile(file, 'utf8').catch(() => '')).trim(); // none yet: first run
  conveniences.push(`SECRET_KEY generated once and kept in ${file}`);
  if (existing.length >= 32) return existing;
  const secret = randomBytes(32).toString('base64url');
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  say(`SECRET_KEY: generated into ${file}`);
  return secret;
}

function embeddedLine(name: string, r: Resolved): string[] {
  if (!r.embedded) return [];
  const where = new URL(r.url);
  return [`embedded ${name} on ${where.hostname}:${where.port} (data in ${r.embedded.dataDir ?? dataDir})`];
}

/** The environment of every process: the operator's, plus the resolved services and conveniences. */
async function environment(conveniences: string[]): Promise<Env> {
  const env: Env = { ...process.env, SECRET_KEY: await secretKey(conveniences) };
  if (env.WEBHOOK_ALLOW_PRIVATE === undefined || env.WEBHOOK_ALLOW_PRIVATE === '') {
    env.WEBHOOK_ALLOW_PRIVATE = 'true';
    conveniences.push('private webhook targets allowed (WEBHOOK_ALLOW_PRIVATE=true): webhooks may call localhost');
  }
  if (!env.PROMETHEUS_TOKEN && (env.PROMETHEUS_PUBLIC === undefined || env.PROMETHEUS_PUBLIC === '')) {
    env.PROMETHEUS_PUBLIC = 'true';
    conveniences.push('GET /metrics and /healthz?verbose=1 open without a token (PROMETHEUS_PUBLIC=true)');
  }
  const pg = await resolvePostgres(env, dataDir, services, say);
  const redis = await resolveRedis(env, dataDir, services, say);
  env.DATABASE_URL = pg.url;
  env.REDIS_URL = redis.url;
  conveniences.push(...embeddedLine('Postgres', pg), ...embeddedLine('Redis', redis));
  await recordLauncherEnv(dataDir, env);
  return env;
}

interface Prepared {
  created: CreatedDemo | null;
  demo: { orgId: string; domain: string; adminEmail: string } | null;
}

async function prepareDatabase(config: Config, conveniences: string[]): Promise<Prepared> {
  await ensureDatabase(config.databaseUrl, say);
  const sql = createPool(config.databaseUrl, { max: 1, application: 'tern-start', pooler: config.databasePooler });
  try {
    const applied = await migrate(sql);
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'database is up to date');
    const { sealed } = await sealStoredSecrets(sql, secretBox(config), { plainOnly: true });
    if (sealed > 0) say(`${sealed} stored secret(s) sealed with SECRET_KEY`);
    let created: CreatedDemo | null = null;
    if ((await countOrgs(sql)) === 0) {
      created = await createDemoOrganization(sql, config, { name: 'Demo', adminEmail: DEMO_ADMIN });
      say(`first run: created the organization "Demo" (${created.organization.id}) with the demo domain`);
    }
    if ((await restoreDemoDomain(sql)) > 0) say('the demo domain was marked failed by a DNS check: verified again');
    const domain = await findDemoDomain(sql);
    if (domain) {
      conveniences.push(
        `demo organization with the domain ${domain.name}: verified, test keys only, never leaves this machine`,
      );
    }
    return { created, demo: domain ? { orgId: domain.org_id, domain: domain.name, adminEmail: DEMO_ADMIN } : null };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Waits until the web process answers /healthz, so that the printed URLs work at once. */
async function waitForWeb(port: number): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && stage === 0) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

async function shutdown(code: number): Promise<never> {
  try {
    if (supervisor) await supervisor.stop();
    for (const s of [...services].reverse()) await s.stop();
  } catch (err) {
    // Stopping gently failed: nothing may outlive the launcher, so everything is killed.
    say(`could not stop cleanly (${err instanceof Error ? err.message : String(err)}): killing everything`);
    supervisor?.kill();
    for (const s of services) s.kill();
    process.exit(1);
  }
  process.exit(supervisor?.failed ? 1 : code);
}

let firstSignalAt = 0;

function onSignal(signal: NodeJS.Signals): void {
  // A terminal's Ctrl-C reaches the whole foreground group, and `npm start` forwards it as
  // well: the same keypress can arrive twice at once. Only a later signal forces.
  if (stage > 0 && Date.now() - firstSignalAt < 1000) return;
  if (stage === 0) firstSignalAt = Date.now();
  stage++;
  if (stage === 1) {
    say(`${signal}: stopping (send it again to force)`);
    void shutdown(0);
    return;
  }
  say(`${signal} again: killing everything`);
  supervisor?.kill();
  for (const s of services) s.kill();
  process.exit(1);
}

/** Waits (a bounded time) until a port answers: the relay's, before its line is printed. */
async function waitForPort(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && stage === 0 && !(await portAnswers(port))) {
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Whatever happens to the launcher, nothing it started outlives it.
  process.on('exit', () => {
    supervisor?.kill();
    for (const s of services) s.kill();
  });
  loadToolConfig(process.env); // a bad variable stops here, named, before anything is started
  await mkdir(dataDir, { recursive: true });
  const conveniences: string[] = [];
  const env = await environment(conveniences);
  const config = loadConfig(env);
  const prepared = await prepareDatabase(config, conveniences);
  if (stage > 0) return;
  // Looked at while the processes start: a few seconds at most, never blocking them.
  const probe: Promise<ProbeResult | null> = probeOutbound(config, { timeoutMs: 4000 }).catch(() => null);

  const fromSource = fileURLToPath(import.meta.url).endsWith('.ts');
  const entries = await readProcfile(root, fromSource);
  supervisor = new Supervisor(root, env, say, (name, how) => {
    if (stage > 0) return;
    stage = 1;
    say(`${name} exited unexpectedly (${how}): stopping the others`);
    void shutdown(1);
  });
  const started = supervisor.start(entries);
  if (started.includes('web') && !(await waitForWeb(config.port))) {
    if (stage === 0) say(`web does not answer on port ${config.port} yet`);
  }
  if (started.includes('relay')) await waitForPort(config.relayPort, 15_000);
  const mode = await probe;
  if (stage > 0) return;
  const lines = bannerLines({
    config,
    ...prepared,
    mode,
    conveniences,
    relayCertPath: '.data/relay-tls/cert.pem',
  });
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch(async (err: unknown) => {
  const message =
    err instanceof MissingDependency || err instanceof ConfigError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`tern: ${message}\n`);
  stage = Math.max(stage, 1);
  supervisor?.kill();
  // Already failing with the message above: a service that does not stop gently is killed by
  // the exit handler, and its own error would hide the first one.
  for (const s of [...services].reverse()) await s.stop().catch(() => {});
  process.exit(1);
});
