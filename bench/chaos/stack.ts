// The installation the fault suite breaks: a private Postgres cluster and a private Redis (or, for
// the failover faults, a Postgres primary with a synchronous standby and a Redis master with a
// replica and three Sentinels, named to the processes as a host list and a Sentinel URL), the
// Procfile processes built in dist/ (`release` first, then web, worker, relay, mx), a message
// sink the worker reaches as its smarthost, and a webhook receiver, all on loopback. Every
// process's output goes to a log file in the run's folder.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import postgres from 'postgres';
import { QUEUE_NAMES } from '../../shared/queues.js';
import { redisKeys } from '../../shared/redis-keys.js';
import { closeRedis, createRedis } from '../../shared/redis.js';
import type { Cleanup } from '../lib/cleanup.js';
import { accepts, entry } from '../lib/processes.js';
import {
  freeLoopbackPort,
  startPrivatePostgres,
  startPrivatePostgresPair,
  startPrivateRedis,
  startPrivateSentinelSet,
  type PrivatePostgres,
  type PrivatePostgresPair,
  type PrivateRedis,
  type PrivateSentinelSet,
} from '../lib/private-services.js';
import { startWebhookReceiver, type WebhookReceiver } from './receiver.js';
import { startMessageSink, type MessageSink } from './sink.js';

export const PROCFILE = {
  web: 'api/http',
  worker: 'workers/main',
  relay: 'api/smtp/relay',
  mx: 'api/smtp/mx',
} as const;
export type ProcessName = keyof typeof PROCFILE;

/** `single`: one Postgres, one Redis; `failover`: a Postgres pair and a Sentinel set. */
export type Engines = 'single' | 'failover';

export interface ChaosStack {
  dir: string;
  /** The single engines (null on a `failover` stack). */
  pg: PrivatePostgres | null;
  redis: PrivateRedis | null;
  /** The replicated engines (null on a `single` stack). */
  failover: { pair: PrivatePostgresPair; sentinels: PrivateSentinelSet } | null;
  sink: MessageSink;
  receiver: WebhookReceiver;
  apiUrl: string;
  relayPort: number;
  mxPort: number;
  databaseUrl: string;
  env: Record<string, string>;
  /** Exits no one asked for (a process that died on its own), by process. */
  unexpectedExits: Map<ProcessName, number>;
  /** Starts a process; resolves once it serves (web: /healthz answers). */
  start(name: ProcessName): Promise<void>;
  kill(name: ProcessName): Promise<void>;
  org: { id: string; token: string; keyId: string; domain: string };
  /** The running process of `name`'s id, if it runs. */
  pid(name: ProcessName): number | undefined;
  /** Starts the private Redis again after `redis.kill()`. */
  restartRedis(): Promise<void>;
}

function runTern(env: Record<string, string>, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [entry('api/cli/tern'), ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      err ? reject(new Error(`tern ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}

async function waitHttp(url: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface StackOptions {
  /** The run's folder: one log file per process. */
  dir: string;
  /** Delivery retry schedule of the processes (DELIVERY_RETRY_SECONDS). */
  deliveryRetry: string;
  webhookRetry: string;
  /** Load pg_stat_statements in the private Postgres (bench/e2e). */
  statements?: boolean;
  engines?: Engines;
}

/** Resolves when something accepts TCP connections on the loopback `port`. */
async function waitPort(port: number, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await accepts(port))) {
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Resolves when the worker process consumes the delivery and webhook queues. */
async function waitWorker(redisUrl: string, prefix: string, ms = 60_000): Promise<void> {
  const connection = createRedis(redisUrl, 'bullmq', 'chaos-check');
  const queues = [QUEUE_NAMES.delivery, QUEUE_NAMES.deliveryBroadcast, QUEUE_NAMES.webhookDelivery].map(
    (name) => new Queue(name, { connection, prefix }),
  );
  try {
    const deadline = Date.now() + ms;
    while ((await Promise.all(queues.map((q) => q.getWorkersCount()))).some((n) => n === 0)) {
      if (Date.now() > deadline) throw new Error('the worker did not start consuming');
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    await closeRedis(connection);
  }
}

/**
 * Starts the install; everything it started is stopped by `cleanup` (registered as it starts,
 * so a start that fails half-way, or a run interrupted at any point, leaves nothing running).
 */
export async function startStack(opts: StackOptions, cleanup: Cleanup): Promise<ChaosStack> {
  const { dir } = opts;
  const [engines, sink, receiver] = await Promise.all([
    startEngines(opts.engines ?? 'single', cleanup, opts.statements),
    startMessageSink().then((sink) => {
      cleanup.add('message sink', () => sink.close());
      return sink;
    }),
    startWebhookReceiver().then((receiver) => {
      cleanup.add('webhook receiver', () => receiver.close());
      return receiver;
    }),
  ]);
  const { pg, redis, failover } = engines;
  const admin = postgres(engines.adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe('create database tern');
  await admin.end();
  const [port, relayPort, mxPort, noDns] = await Promise.all([
    freeLoopbackPort(),
    freeLoopbackPort(),
    freeLoopbackPort(),
    freeLoopbackPort(),
  ]);
  const databaseUrl = engines.urlFor('tern');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    DATABASE_URL: databaseUrl,
    REDIS_URL: engines.redisUrl,
    REDIS_PREFIX: 'chaos',
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    RELAY_PORT: String(relayPort),
    MX_PORT: String(mxPort),
    SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}`,
    // Nothing here needs DNS (the smarthost and the receiver are addresses); a stray look-up
    // goes to a loopback port where no one answers, never to the machine's resolvers.
    DNS_SERVERS: `127.0.0.1:${noDns}`,
    SECRET_KEY: 'chaos-suite-secret-key-0123456789abcdefghij',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    DELIVERY_RETRY_SECONDS: opts.deliveryRetry,
    WEBHOOK_RETRY_SECONDS: opts.webhookRetry,
    LOG_LEVEL: 'warn',
  };
  await runTern(env, ['migrate']); // the Procfile's `release`
  const children = new Map<ProcessName, ChildProcess>();
  const unexpectedExits = new Map<ProcessName, number>();
  const start = async (name: ProcessName) => {
    const log = createWriteStream(join(dir, `${name}.log`), { flags: 'a' });
    const child = spawn(process.execPath, [entry(PROCFILE[name])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    cleanup.process(child.pid);
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    children.set(name, child);
    child.once('exit', () => {
      if (children.get(name) === child) unexpectedExits.set(name, (unexpectedExits.get(name) ?? 0) + 1);
    });
    if (name === 'web') await waitHttp(`http://127.0.0.1:${port}/healthz`);
  };
  const kill = async (name: ProcessName) => {
    const child = children.get(name);
    children.delete(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  cleanup.add('Tern processes', async () => {
    for (const name of [...children.keys()]) await kill(name);
  });
  for (const name of Object.keys(PROCFILE) as ProcessName[]) await start(name);
  // The load starts only once every process serves: a send refused because the relay was not
  // listening yet would say nothing about faults.
  await Promise.all([
    waitPort(relayPort, 'the relay'),
    waitPort(mxPort, 'the MX'),
    waitWorker(engines.redisUrl, redisKeys(env.REDIS_PREFIX!).bullPrefix),
  ]);
  const apiUrl = `http://127.0.0.1:${port}/api/v1`;
  const org = await seed(env, databaseUrl, apiUrl, receiver);
  return {
    dir,
    pg,
    redis,
    failover,
    sink,
    receiver,
    apiUrl,
    relayPort,
    mxPort,
    databaseUrl,
    env,
    unexpectedExits,
    start,
    kill,
    org,
    pid: (name) => children.get(name)?.pid,
    restartRedis: async () => {
      await redis!.start();
      cleanup.process(redis!.pid());
    },
  };
}

/** The engines of the stack, each registered with `cleanup` as it starts. */
async function startEngines(engines: Engines, cleanup: Cleanup, statements?: boolean) {
  if (engines === 'failover') {
    const [pair, sentinels] = await Promise.all([
      startPrivatePostgresPair().then((pair) => {
        const reap = [...pair.pgCtls.map((pg) => ({ pg })), { rm: pair.dir }];
        cleanup.add('private Postgres pair', () => pair.destroy(), reap);
        return pair;
      }),
      startPrivateSentinelSet().then((sentinels) => {
        cleanup.add('private Sentinel set', () => sentinels.destroy(), [{ rm: sentinels.dir }]);
        for (const pid of sentinels.pids()) cleanup.process(pid);
        return sentinels;
      }),
    ]);
    return {
      pg: null,
      redis: null,
      failover: { pair, sentinels },
      adminUrl: pair.url,
      urlFor: (db: string) => pair.urlFor(db),
      redisUrl: sentinels.url,
    };
  }
  const [pg, redis] = await Promise.all([
    startPrivatePostgres({ statements }).then((pg) => {
      cleanup.add('private Postgres', () => pg.destroy(), [{ pg: pg.pgCtl }, { rm: pg.dir }]);
      return pg;
    }),
    startPrivateRedis({ persist: true }).then((redis) => {
      cleanup.add('private Redis', () => redis.destroy(), [{ rm: redis.dir }]);
      cleanup.process(redis.pid());
      return redis;
    }),
  ]);
  return { pg, redis, failover: null, adminUrl: pg.url, urlFor: (db: string) => pg.urlFor(db), redisUrl: redis.url };
}

/** One organization, a verified domain past its warm-up, a high rate limit, a webhook for every event. */
async function seed(env: Record<string, string>, databaseUrl: string, apiUrl: string, receiver: WebhookReceiver) {
  const created = JSON.parse(
    (await runTern(env, ['org', 'create', '--name', 'Chaos', '--admin-email', 'ops@chaos.test', '--json']))
      .trim()
      .split('\n')
      .at(-1)!,
  ) as { organization: { id: string }; key: { id: string; token: string } };
  const domain = 'acme.test';
  await runTern(env, ['domain', 'add', '--org', created.organization.id, '--name', domain, '--verified', '--json']);
  // Past the warm-up ramp: the suite measures faults, not the daily cap of a new domain.
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  await sql`update domains set verified_at = now() - interval '60 days' where name = ${domain}`;
  await sql.end();
  const auth = { authorization: `Bearer ${created.key.token}`, 'content-type': 'application/json' };
  const patched = await fetch(`${apiUrl}/organization`, {
    method: 'PATCH',
    headers: auth,
    body: JSON.stringify({ rate_limit: { requests_per_second: 100000, burst: 100000 } }),
  });
  if (!patched.ok) throw new Error(`PATCH /organization: ${patched.status} ${await patched.text()}`);
  const hook = await fetch(`${apiUrl}/webhooks`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ url: receiver.url }),
  });
  if (!hook.ok) throw new Error(`POST /webhooks: ${hook.status} ${await hook.text()}`);
  receiver.secret = ((await hook.json()) as { signing_secret: string }).signing_secret;
  return { id: created.organization.id, token: created.key.token, keyId: created.key.id, domain };
}
