// `npm start`: the whole of Tern in one process tree, for a laptop or a demo. It finds (or
// starts) Postgres and Redis, creates the database if needed, migrates, creates a demo
// organization on first run, then runs every Procfile process with the operator's environment.
// Stopping: the first SIGINT/SIGTERM sends SIGTERM to the processes and waits for them, then
// stops the embedded servers it started; a second signal kills everything at once. A process
// that dies on its own takes the others down and the launcher exits 1, naming it.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createOrganization } from '../../shared/bootstrap.js';
import { ConfigError, loadConfig, type Config } from '../../shared/config.js';
import { migrate } from '../../shared/db/migrate.js';
import { countOrgs } from '../../shared/db/orgs.js';
import { createPool } from '../../shared/db/pool.js';
import { packageRoot } from '../../shared/paths.js';
import { readProcfile, Supervisor } from './start/children.js';
import { ensureDatabase, resolvePostgres, resolveRedis } from './start/resolve.js';
import { MissingDependency, type Service } from './start/services.js';

const say = (line: string): void => void process.stdout.write(`tern | ${line}\n`);
const root = packageRoot();
const dataDir = process.env.TERN_DATA_DIR || `${root}/.data`;
const services: Service[] = [];
let supervisor: Supervisor | null = null;
let stage = 0;

/** SECRET_KEY as given, else the one generated into .data/secret on the first run. */
async function secretKey(): Promise<string> {
  if (process.env.SECRET_KEY) return process.env.SECRET_KEY;
  const file = `${dataDir}/secret`;
  const existing = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (existing.length >= 32) return existing;
  const secret = randomBytes(32).toString('base64url');
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  say(`SECRET_KEY: generated into ${file}`);
  return secret;
}

async function prepareDatabase(config: Config): Promise<string[]> {
  await ensureDatabase(config.databaseUrl, say);
  const sql = createPool(config.databaseUrl, { max: 1, application: 'tern-start' });
  try {
    const applied = await migrate(sql);
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'database is up to date');
    if ((await countOrgs(sql)) > 0) return [];
    const demo = await createOrganization(sql, config.brand, { name: 'Demo', adminEmail: 'demo@tern.local' });
    const api = `http://localhost:${config.port}/api/v1`;
    return [
      '',
      'First run: created the organization "Demo".',
      `  organization  ${demo.organization.id}`,
      `  console login ${demo.user.email}  password: ${demo.user.password}`,
      `  ADMIN key     ${demo.key.token}`,
      `Try it:  curl -H "Authorization: Bearer ${demo.key.token}" ${api}/keys/me`,
      'The password and the key are shown only this once.',
    ];
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
  if (supervisor) await supervisor.stop();
  for (const s of [...services].reverse()) await s.stop();
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

async function main(): Promise<void> {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Whatever happens to the launcher, nothing it started outlives it.
  process.on('exit', () => {
    supervisor?.kill();
    for (const s of services) s.kill();
  });
  loadConfig(process.env); // a bad variable stops here, named, before anything is started
  await mkdir(dataDir, { recursive: true });
  const env: Record<string, string | undefined> = { ...process.env, SECRET_KEY: await secretKey() };
  env.DATABASE_URL = await resolvePostgres(env, dataDir, services, say);
  env.REDIS_URL = await resolveRedis(env, dataDir, services, say);
  const config = loadConfig(env);
  const firstRun = await prepareDatabase(config);
  if (stage > 0) return;

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
  if (stage > 0) return;
  const lines = [
    '',
    'Tern is running:',
    `  API         http://localhost:${config.port}/api/v1`,
    `  Console     http://localhost:${config.port}/console`,
    `  SMTP relay  localhost:${config.relayPort}  (username: key id, password: key token)`,
    `  MX          localhost:${config.mxPort}`,
    ...firstRun,
    '',
    'Ctrl-C stops it.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch(async (err: unknown) => {
  const message =
    err instanceof MissingDependency || err instanceof ConfigError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`tern: ${message}\n`);
  stage = Math.max(stage, 1);
  supervisor?.kill();
  for (const s of [...services].reverse()) await s.stop().catch(() => {});
  process.exit(1);
});
