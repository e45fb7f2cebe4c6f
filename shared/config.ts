// The one typed configuration of every Tern process (DESIGN §2). Each variable is written once, in
// VARIABLES below: its name, its parser, its default and its line of docs/configuration.md. The
// typed object (Config), the list of names (CONFIG_VARIABLES) and the tables of
// docs/configuration.md (configTables(), checked by test/unit/docs.test.ts; `npm run docs:config`
// rewrites them) come from it. Parsed once at start; a bad value stops the process with a message
// that names the variable.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstHostUrl } from './db/url.js';
import { parseClusterUrl, parseSentinelUrl } from './redis-url.js';

/** The shortest SECRET_KEY accepted: 32 characters (`openssl rand -base64 48` gives 64). */
export const MIN_SECRET_LENGTH = 32;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

export const DATABASE_POOLERS = ['none', 'session', 'transaction'] as const;
export type DatabasePooler = (typeof DATABASE_POOLERS)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

function port(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a port number, got "${raw}"`);
  const n = Number(raw);
  if (n > 65535) throw new ConfigError(name, `must be between 0 and 65535, got ${n}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function positive(env: Env, name: string, fallback: number, integer = false): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new ConfigError(name, `must be a positive ${integer ? 'integer' : 'number'}, got "${raw}"`);
  }
  return n;
}

function atLeast(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new ConfigError(name, `must be an integer ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

function nonNegative(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be an integer ≥ 0, got "${raw}"`);
  return Number(raw);
}

/** An integer from `min` to `max` inclusive. */
function between(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

/** A number ≥ 0, fractions allowed. */
function nonNegativeNumber(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new ConfigError(name, `must be a number ≥ 0, got "${raw}"`);
  return Number(raw);
}

/** A fraction from 0 to 1 inclusive. */
function share(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || n > 1) throw new ConfigError(name, `must be a number from 0 to 1, got "${raw}"`);
  return n;
}

function secondsList(env: Env, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((item) => {
    const s = item.trim();
    if (!/^\d+(\.\d+)?$/.test(s) || Number(s) <= 0) {
      throw new ConfigError(name, `must be a comma-separated list of positive seconds, got "${s}"`);
    }
    return Number(s);
  });
}

function url(env: Env, name: string, fallback: string | null, protocols: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}

/** A Postgres URL, with one host or a libpq host list (`h1:p1,h2:p2`), each host checked. */
function databaseUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let first: string;
  try {
    first = firstHostUrl(raw);
  } catch (err) {
    throw new ConfigError(name, `${(err as Error).message}, got "${raw}"`);
  }
  url({ [name]: first }, name, fallback, ['postgres:', 'postgresql:']);
  return raw;
}

function redisUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  try {
    if (parseClusterUrl(raw) ?? parseSentinelUrl(raw)) return raw;
  } catch (err) {
    throw new ConfigError(name, `${(err as Error).message}, got "${raw}"`);
  }
  return url(env, name, fallback, ['redis:', 'rediss:'])!;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function hostPortList(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((item) => {
    const s = item.trim();
    // host, host:port, [v6]:port or a bare IPv6 address
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+|[0-9a-fA-F:]+)(?::(\d{1,5}))?$/.exec(s);
    if (!m || (m[2] !== undefined && Number(m[2]) > 65535)) {
      throw new ConfigError(name, `must be a comma-separated host:port list, got "${s}"`);
    }
    return s;
  });
}

/** A comma-separated list of DNS zones (lower-cased, without a trailing dot). */
function zoneList(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((item) => {
    const zone = item.trim().toLowerCase().replace(/\.$/, '');
    if (!/^(?=.{1,200}$)([a-z0-9_]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{1,63}$/.test(zone)) {
      throw new ConfigError(name, `must be a comma-separated list of DNS zones, got "${item.trim()}"`);
    }
    return zone;
  });
}

/**
 * The journal's folder when DELIVERY_JOURNAL_DIR is unset: the state directory systemd gives a
 * unit with StateDirectory= (STATE_DIRECTORY, its first folder), else the temporary folder (a
 * checkout's npm start; `tern doctor` warns about it in production).
 */
function defaultJournalDir(env: Env, brand: string): string {
  const state = env.STATE_DIRECTORY?.split(':')[0];
  return state ? join(state, 'delivery-journal') : join(tmpdir(), `${brand}-delivery-journal`);
}

/** A value that must match `pattern` (the default included). */
function matching(env: Env, name: string, fallback: string, pattern: RegExp, rule: string): string {
  const v = str(env, name, fallback);
  if (!pattern.test(v)) throw new ConfigError(name, `${rule}, got "${v}"`);
  return v;
}

/** Unset or empty: null; else it must match `pattern`. */
function optional(
  env: Env,
  name: string,
  pattern: RegExp,
  rule: string,
  opts: { trim?: boolean; quote?: boolean } = {},
): string | null {
  const raw = str(env, name, '');
  const v = opts.trim ? raw.trim() : raw;
  if (v === '') return null;
  if (!pattern.test(v)) throw new ConfigError(name, opts.quote ? `${rule}, got "${v}"` : rule);
  return v;
}

/** One of two variables that are set together or not at all (a certificate and its key). */
function paired(env: Env, name: string, other: string): string | null {
  const v = str(env, name, '') || null;
  if ((v === null) !== (str(env, other, '') === '')) {
    const [first, second] = [name, other].sort();
    throw new ConfigError(v === null ? name : other, `${first} and ${second} go together`);
  }
  return v;
}

/** SECRET_KEY when set ('' when not: loadConfig requires it, the tools do not). */
function secret(env: Env, name: string): string {
  const v = str(env, name, '');
  if (v !== '' && v.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(name, `must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  return v;
}

/** A comma-separated list of names; null when unset. */
function nameList(env: Env, name: string): string[] | null {
  const raw = str(env, name, '');
  return raw
    ? raw
        .split(',')
        .map((q) => q.trim())
        .filter(Boolean)
    : null;
}

type Section = 'services' | 'delivery' | 'relay' | 'inbound' | 'operations';

interface Variable<T, D> {
  /** The environment variable. */
  env: string;
  /** The table of docs/configuration.md that lists it. */
  section: Section;
  default?: D;
  /** The default as docs/configuration.md shows it, when it is not `default` itself. */
  shown?: string;
  /** Listed in the row of the variable before it (a certificate and its key). */
  sameRow?: boolean;
  read: (env: Env, name: string, fallback: D) => T;
  /** Its line of docs/configuration.md (the Meaning column). */
  doc?: string;
}

function variable<T, D = undefined>(v: Variable<T, D>): Variable<T, D> {
  return v;
}

/** The value of another variable, for a default that derives from it. */
function value(env: Env, key: 'brand' | 'port' | 'baseUrl' | 'mxHost'): string {
  const v = VARIABLES[key] as Variable<unknown, unknown>;
  return String(v.read(env, v.env, v.default));
}

/** Every variable, in the order of docs/configuration.md. */
const VARIABLES = {
  databaseUrl: variable({
    env: 'DATABASE_URL',
    section: 'services',
    default: 'postgres://postgres@127.0.0.1:5432/tern',
    read: (env, name, d) => databaseUrl(env, name, d),
    doc: "Postgres connection URL (`postgres:` or `postgresql:`). It may list several hosts in libpq form, `postgres://user:password@host1:port1,host2:port2/db?target_session_attrs=read-write`: every process (the CLI and `npm start`'s migrations too) connects to the first writable one and finds the new primary by itself after a failover. See [Deployment](deployment.md#high-availability).",
  }),
  databasePoolMax: variable({
    env: 'DATABASE_POOL_MAX',
    section: 'services',
    default: 10,
    read: (env, name, d) => positive(env, name, d, true),
    doc: "Most Postgres connections per process (web, worker, relay, mx). A `worker` process that runs its broadcast stream on a thread of its own splits them between its two threads (half each, one at least). One send is one statement, so 10 serves 50 concurrent senders; raise it with Postgres's `max_connections` in mind.",
  }),
  databasePooler: variable({
    env: 'DATABASE_POOLER',
    section: 'services',
    default: 'none' as DatabasePooler,
    read: (env, name, d) => oneOf(env, name, DATABASE_POOLERS, d),
    doc: 'What `DATABASE_URL` points at: `none` (Postgres itself) or `session` (a pooler in session mode) change nothing; `transaction` (PgBouncer with `pool_mode = transaction`) turns off prepared statements and the per-connection `statement_timeout`, so set it on the database instead. Migrations (`release`) work through it. See [Deployment](deployment.md#pgbouncer-in-transaction-mode).',
  }),
  redisUrl: variable({
    env: 'REDIS_URL',
    section: 'services',
    default: 'redis://127.0.0.1:6379',
    read: (env, name, d) => redisUrl(env, name, d),
    doc: "One Redis (`redis://[user:password@]host:port[/db]`, `rediss:` for TLS) or a Redis Cluster: `redis+cluster://[user:password@]host1:port1,host2:port2,…` (`rediss+cluster:` for TLS), any reachable masters as seeds. See [Deployment](deployment.md#redis-cluster). Or the master of a Sentinel set: `redis+sentinel://[:password@]host1:port1,host2:port2,…/<master name>[?db=N]` (the Sentinels' addresses; `rediss+sentinel:` for TLS to the master; `&sentinel_password=` when the Sentinels have one of their own); every connection follows a failover by itself. See [Deployment](deployment.md#high-availability).",
  }),
  redisPrefix: variable({
    env: 'REDIS_PREFIX',
    section: 'services',
    shown: 'value of `BRAND`',
    read: (env, name) =>
      matching(env, name, value(env, 'brand'), /^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . : -'),
    doc: 'Prefix of every Redis key, pub/sub channel and BullMQ queue; lets several installs (or test runs) share one Redis. 1–64 of `A-Z a-z 0-9 _ . : -`.',
  }),
  port: variable({
    env: 'PORT',
    section: 'services',
    default: 3000,
    read: (env, name, d) => port(env, name, d),
    doc: 'HTTP port of the `web` process.',
  }),
  baseUrl: variable({
    env: 'BASE_URL',
    section: 'services',
    shown: '`http://localhost:$PORT`',
    read: (env, name) =>
      (url(env, name, `http://localhost:${value(env, 'port')}`, ['http:', 'https:']) ?? '').replace(/\/+$/, ''),
    doc: 'Public URL of the install, used in tracking and unsubscribe links.',
  }),
  brand: variable({
    env: 'BRAND',
    section: 'services',
    default: 'tern',
    read: (env, name, d) =>
      matching(env, name, d, /^[a-z][a-z0-9]{1,15}$/, 'must be 2-16 lower-case letters or digits'),
    doc: 'Product name: key prefixes (`tern_live_…`), webhook headers. 2–16 lower-case letters or digits.',
  }),
  relayPort: variable({
    env: 'RELAY_PORT',
    section: 'services',
    default: 2587,
    read: (env, name, d) => port(env, name, d),
    doc: 'Port of the SMTP submission relay (`relay`).',
  }),
  mxPort: variable({
    env: 'MX_PORT',
    section: 'services',
    default: 2525,
    read: (env, name, d) => port(env, name, d),
    doc: 'Port of the inbound MX (`mx`).',
  }),
  smtpSmarthost: variable({
    env: 'SMTP_SMARTHOST',
    section: 'services',
    shown: 'none',
    read: (env, name) => url(env, name, null, ['smtp:', 'smtps:']),
    doc: '`smtp://` or `smtps://` URL; when set, all outbound mail goes through it instead of MX look-ups.',
  }),
  outboundPort: variable({
    env: 'OUTBOUND_PORT',
    section: 'services',
    default: 25,
    read: (env, name, d) => port(env, name, d),
    doc: "Port dialled on recipients' MX hosts.",
  }),
  dnsServers: variable({
    env: 'DNS_SERVERS',
    section: 'services',
    shown: 'system resolvers',
    read: (env, name) => hostPortList(env, name),
    doc: 'Comma-separated `host[:port]` list for MX look-ups and SPF/DKIM verification.',
  }),
  webhookAllowPrivate: variable({
    env: 'WEBHOOK_ALLOW_PRIVATE',
    section: 'services',
    default: false,
    read: (env, name, d) => bool(env, name, d),
    doc: '`true` lets webhooks reach loopback/private addresses and plain `http` (development, tests).',
  }),
  workerQueues: variable({
    env: 'WORKER_QUEUES',
    section: 'services',
    shown: 'all',
    read: (env, name) => nameList(env, name),
    doc: "Comma-separated queues a `worker` process consumes; an unknown name stops it. The queues: `delivery` (transactional mail), `delivery-broadcast`, `webhook-fanout`, `webhook-delivery`, `metrics-rollup`, `inbound`, `dmarc-report` (DMARC aggregate reports), `broadcast` (a broadcast's batches), `automation`, `contact-bulk`, `retention`.",
  }),
  logLevel: variable({
    env: 'LOG_LEVEL',
    section: 'services',
    default: 'info',
    read: (env, name, d) => oneOf(env, name, LOG_LEVELS, d),
    doc: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.',
  }),
  shutdownGraceSeconds: variable({
    env: 'SHUTDOWN_GRACE_SECONDS',
    section: 'services',
    default: 25,
    read: (env, name, d) => positive(env, name, d, true),
    doc: 'On the first SIGTERM (or SIGINT) a process stops taking new work and lets its work in flight (HTTP requests, relay and MX sessions, SMTP transactions of deliveries) finish for at most this long, then exits. A `worker` hands the deliveries it holds but has not started back at once (due again, another process sends them right away). Keep it below the stop timeout of the supervisor (systemd `TimeoutStopSec`, Kubernetes `terminationGracePeriodSeconds`). See [Operations](operations.md#stopping-a-process).',
  }),
  bodyLimitBytes: variable({
    env: 'BODY_LIMIT_BYTES',
    section: 'services',
    default: 1024 * 1024,
    read: (env, name, d) => atLeast(env, name, d, 1024),
    doc: 'Largest JSON body accepted by routes that do not declare their own limit (≥ 1024).',
  }),
  secretKey: variable({
    env: 'SECRET_KEY',
    section: 'services',
    shown: 'none: required (`npm start` alone generates one into `.data/secret`)',
    read: (env, name) => secret(env, name),
    doc: 'Install secret every process must share: it keys the HMACs of VERP, SRS, tracking and unsubscribe tokens, and the key that seals webhook signing secrets and DKIM private keys in Postgres ([secrets at rest](operations.md#secrets-at-rest)): 32+ random characters (`openssl rand -base64 48`). The `web`, `worker`, `relay` and `mx` processes refuse to start without it, whatever `NODE_ENV` says (`tern: SECRET_KEY: is required: …`, exit 1). `release` (`tern migrate`) and the other `tern` commands sign nothing and run without it; when it is set, it must be valid.',
  }),
  secretKeyPrevious: variable({
    env: 'SECRET_KEY_PREVIOUS',
    section: 'services',
    shown: 'none',
    read: (env, name) => secret(env, name) || null,
    doc: 'The `SECRET_KEY` before a change, while `tern secrets rotate` seals the stored secrets again: values sealed with it still open ([changing SECRET_KEY](operations.md#secrets-at-rest)). 32+ characters.',
  }),
  mxHost: variable({
    env: 'MX_HOST',
    section: 'services',
    shown: 'host name of `BASE_URL`',
    read: (env, name) =>
      matching(env, name, new URL(value(env, 'baseUrl')).hostname, /^[A-Za-z0-9.-]{1,253}$/, 'must be a host name'),
    doc: "Host name this install's MX answers on: the target of the MX records domains publish.",
  }),
  webhookRetrySeconds: variable({
    env: 'WEBHOOK_RETRY_SECONDS',
    section: 'services',
    default: [5, 300, 1800, 7200, 18000, 36000, 36000],
    read: (env, name, d) => secondsList(env, name, d),
    doc: 'Webhook retry schedule in seconds, one entry per retry (then `failed`).',
  }),
  prometheusToken: variable({
    env: 'PROMETHEUS_TOKEN',
    section: 'services',
    shown: 'none',
    read: (env, name) =>
      optional(env, name, /^[\x21-\x7e]{16,}$/, 'must be 16 or more printable characters without spaces'),
    doc: 'Bearer token of `GET /metrics` and `GET /healthz?verbose=1` (16+ printable characters, no spaces); with it, a request without the token answers 401. See [Monitoring](operations.md#monitoring-prometheus-grafana-health).',
  }),
  prometheusPublic: variable({
    env: 'PROMETHEUS_PUBLIC',
    section: 'services',
    default: false,
    shown: '`false` (`npm start`: `true` when no token is set)',
    read: (env, name, d) => bool(env, name, d),
    doc: 'Without a token: `true` serves `GET /metrics` and `GET /healthz?verbose=1` to anyone; `false` answers them 403. Ignored when `PROMETHEUS_TOKEN` is set.',
  }),
  storeConfirmSeconds: variable({
    env: 'STORE_CONFIRM_SECONDS',
    section: 'services',
    default: 15,
    read: (env, name, d) => positive(env, name, d),
    doc: '`web` and `relay`: when the connection to Postgres breaks while a message is being stored, how long the send keeps trying to learn whether it was stored (it runs the same insert again, which stores the message once) before answering 504 `outcome_unknown` (the relay: `451`). Keep client and proxy timeouts above it. See [Operations](operations.md#what-an-answer-says-was-stored).',
  }),
  trustProxy: variable({
    env: 'TRUST_PROXY',
    section: 'services',
    default: false,
    read: (env, name, d) => bool(env, name, d),
    doc: '`true` (or `1`, `yes`, `on`) when the web process sits behind a reverse proxy: the client IP (console sign-in throttling, logs) and the protocol come from `X-Forwarded-For` / `X-Forwarded-Proto`. Leave it off when clients reach the process directly, or they can forge their address.',
  }),
  heloName: variable({
    env: 'HELO_NAME',
    section: 'delivery',
    shown: 'value of `MX_HOST`',
    read: (env, name) => str(env, name, value(env, 'mxHost')),
    doc: 'Name sent in `EHLO` on outbound SMTP; should resolve to, and be the reverse DNS of, the sending address.',
  }),
  deliveryConcurrency: variable({
    env: 'DELIVERY_CONCURRENCY',
    section: 'delivery',
    default: 50,
    read: (env, name, d) => positive(env, name, d, true),
    doc: 'Delivery jobs one `worker` process runs at once per stream: transactional mail has this many slots of its own, and broadcast mail as many (fewer while transactional mail flows, see `BROADCAST_MAX_SHARE`).',
  }),
  broadcastQueueMax: variable({
    env: 'BROADCAST_QUEUE_MAX',
    section: 'delivery',
    default: 2000,
    read: (env, name, d) => nonNegative(env, name, d),
    doc: 'Broadcast messages waiting for delivery (the `delivery-broadcast` queue, every organization) past which broadcasts store no next batch until the queue drains below it; `0` never holds a batch back. Raise it where workers deliver more than a few hundred broadcast messages a second ([broadcasts](api/broadcasts.md)).',
  }),
  broadcastMaxShare: variable({
    env: 'BROADCAST_MAX_SHARE',
    section: 'delivery',
    default: 0.5,
    read: (env, name, d) => share(env, name, d),
    doc: 'Share (0–1) of `DELIVERY_CONCURRENCY` that broadcast deliveries may hold in a `worker` process while it delivers transactional mail (and for 2 s after); one slot at least. With no transactional mail, broadcast mail may use every slot ([delivery.md](delivery.md#streams-priority-and-fairness)).',
  }),
  outboundConnectionsPerHost: variable({
    env: 'OUTBOUND_CONNECTIONS_PER_HOST',
    section: 'delivery',
    default: 5,
    read: (env, name, d) => positive(env, name, d, true),
    doc: 'Most simultaneous outbound connections to one MX host (or the smarthost) per stream and `worker` process (a process delivering both streams opens up to twice as many).',
  }),
  deliveryRetrySeconds: variable({
    env: 'DELIVERY_RETRY_SECONDS',
    section: 'delivery',
    default: [60, 300, 900, 1800, 3600, 7200, 14400],
    read: (env, name, d) => secondsList(env, name, d),
    doc: 'Back-off between attempts of a deferred recipient, in seconds; the last value repeats.',
  }),
  deliveryMaxAgeHours: variable({
    env: 'DELIVERY_MAX_AGE_HOURS',
    section: 'delivery',
    default: 72,
    read: (env, name, d) => positive(env, name, d),
    doc: 'A recipient still deferred this long after the message was created bounces (soft, `General`).',
  }),
  deliveryPauseRecheckSeconds: variable({
    env: 'DELIVERY_PAUSE_RECHECK_SECONDS',
    section: 'delivery',
    default: 60,
    read: (env, name, d) => positive(env, name, d),
    doc: 'How often a message held by a paused organization is looked at again.',
  }),
  deliverySweepSeconds: variable({
    env: 'DELIVERY_SWEEP_SECONDS',
    section: 'delivery',
    default: 15,
    read: (env, name, d) => positive(env, name, d),
    doc: 'Interval of the delivery sweeper, which re-enqueues due recipients whose job Redis lost.',
  }),
  deliverySweepGraceSeconds: variable({
    env: 'DELIVERY_SWEEP_GRACE_SECONDS',
    section: 'delivery',
    default: 15,
    read: (env, name, d) => positive(env, name, d),
    doc: 'A recipient due this long with no attempt in flight is re-enqueued by the sweeper.',
  }),
  deliveryJournalDir: variable({
    env: 'DELIVERY_JOURNAL_DIR',
    section: 'delivery',
    shown:
      '`$STATE_DIRECTORY/delivery-journal` under a systemd unit with `StateDirectory=`, else `<temporary folder>/tern-delivery-journal`',
    read: (env, name) => str(env, name, defaultJournalDir(env, value(env, 'brand'))),
    doc: "Where each `worker` process journals the messages servers accepted before their results reach Postgres; a worker that takes over a killed one's attempt on the same machine reads it instead of sending again. In production, a persistent folder every worker process of the machine shares (the units of `tern systemd`: `/var/lib/tern/delivery-journal`, their `StateDirectory`); `tern doctor` warns about `/tmp`, `/var/tmp` and a tmpfs. See [Deployment](deployment.md#the-delivery-journal).",
  }),
  contactBulkConcurrency: variable({
    env: 'CONTACT_BULK_CONCURRENCY',
    section: 'delivery',
    default: 1,
    read: (env, name, d) => positive(env, name, d, true),
    doc: 'Contact imports and exports one `worker` process runs at once (each keeps about one core busy).',
  }),
  contactBulkSweepSeconds: variable({
    env: 'CONTACT_BULK_SWEEP_SECONDS',
    section: 'delivery',
    default: 30,
    read: (env, name, d) => positive(env, name, d),
    doc: 'Interval of the sweeper that restarts imports and exports whose worker stopped (their lease, 60 s, ran out).',
  }),
  relayTlsPort: variable({
    env: 'RELAY_TLS_PORT',
    section: 'relay',
    shown: 'off',
    read: (env, name) => (env[name] ? port(env, name, 0) : null),
    doc: 'An additional implicit-TLS (SMTPS) port of the relay.',
  }),
  relayTlsCert: variable({
    env: 'RELAY_TLS_CERT',
    section: 'relay',
    shown: 'none',
    read: (env, name) => paired(env, name, 'RELAY_TLS_KEY'),
    doc: 'PEM certificate (chain) and key files of the relay; both or neither. Without them the relay makes a self-signed certificate under `.data/relay-tls/`.',
  }),
  relayTlsKey: variable({
    env: 'RELAY_TLS_KEY',
    section: 'relay',
    sameRow: true,
    read: (env, name) => paired(env, name, 'RELAY_TLS_CERT'),
  }),
  relayMaxBytes: variable({
    env: 'RELAY_MAX_BYTES',
    section: 'relay',
    default: 40 * 1024 * 1024,
    shown: '`41943040` (40 MiB)',
    read: (env, name, d) => positive(env, name, d, true),
    doc: 'Largest message the relay accepts (checked on the data stream).',
  }),
  relayMaxClients: variable({
    env: 'RELAY_MAX_CLIENTS',
    section: 'relay',
    default: 1000,
    read: (env, name, d) => positive(env, name, d, true),
    doc: "Most SMTP sessions one `relay` process holds at once; a client beyond them is answered `421` and disconnected (it retries later). Keep it under the process's file descriptor limit (`ulimit -n`).",
  }),
  relayAllowInsecureAuth: variable({
    env: 'RELAY_ALLOW_INSECURE_AUTH',
    section: 'relay',
    default: false,
    read: (env, name, d) => bool(env, name, d),
    doc: '**Development only**: lets AUTH run on a connection without TLS.',
  }),
  mxTlsCert: variable({
    env: 'MX_TLS_CERT',
    section: 'inbound',
    shown: 'none',
    read: (env, name) => paired(env, name, 'MX_TLS_KEY'),
    doc: "PEM certificate (chain) and key files the MX offers with STARTTLS to sending servers; both or neither. Without them the MX offers smtp-server's built-in test certificate (`tern doctor` warns).",
  }),
  mxTlsKey: variable({
    env: 'MX_TLS_KEY',
    section: 'inbound',
    sameRow: true,
    read: (env, name) => paired(env, name, 'MX_TLS_CERT'),
  }),
  inboundMaxBytes: variable({
    env: 'INBOUND_MAX_BYTES',
    section: 'inbound',
    default: 30 * 1024 * 1024,
    shown: '`31457280` (30 MiB)',
    read: (env, name, d) => atLeast(env, name, d, 1024),
    doc: 'Largest inbound message the MX and the HTTP intake accept (≥ 1024).',
  }),
  inboundParseMaxParts: variable({
    env: 'INBOUND_PARSE_MAX_PARTS',
    section: 'inbound',
    default: 500,
    read: (env, name, d) => between(env, name, d, 1, 900),
    doc: 'Most MIME parts of a received message (1–900); a message with more is kept raw, marked `unparsed` and never parsed. See [Inbound](inbound.md#parse-limits).',
  }),
  inboundParseMaxDepth: variable({
    env: 'INBOUND_PARSE_MAX_DEPTH',
    section: 'inbound',
    default: 50,
    read: (env, name, d) => between(env, name, d, 1, 100),
    doc: 'Deepest nesting of multiparts and embedded messages in a received message (1–100); deeper is kept raw and marked `unparsed`.',
  }),
  inboundParseSeconds: variable({
    env: 'INBOUND_PARSE_SECONDS',
    section: 'inbound',
    default: 10,
    read: (env, name, d) => positive(env, name, d),
    doc: 'Longest the parse of one received message (or one DMARC report) may take; its thread is then ended and the message kept raw and marked `unparsed`.',
  }),
  inboundParseMemoryMb: variable({
    env: 'INBOUND_PARSE_MEMORY_MB',
    section: 'inbound',
    default: 256,
    read: (env, name, d) => between(env, name, d, 32, 16384),
    doc: 'Heap of one parse thread in MiB (32–16384); a message whose parse needs more is kept raw and marked `unparsed`.',
  }),
  dmarcReporterHourlyMax: variable({
    env: 'DMARC_REPORTER_HOURLY_MAX',
    section: 'inbound',
    default: 30,
    read: (env, name, d) => positive(env, name, d, true),
    doc: "DMARC aggregate reports read per reporting domain (the envelope sender's) and organization in an hour; the rest are kept raw and skipped (`DMARC_REPORT_RATE_LIMITED`).",
  }),
  mxMaxClients: variable({
    env: 'MX_MAX_CLIENTS',
    section: 'inbound',
    default: 1000,
    read: (env, name, d) => positive(env, name, d, true),
    doc: "Most SMTP sessions one `mx` process holds at once; a server beyond them is answered `421` and disconnected (sending servers retry). Keep it under the process's file descriptor limit (`ulimit -n`).",
  }),
  mxMaxRecipients: variable({
    env: 'MX_MAX_RECIPIENTS',
    section: 'inbound',
    default: 100,
    read: (env, name, d) => atLeast(env, name, d, 100),
    doc: 'Most recipients the MX accepts in one transaction (at least 100, the least RFC 5321 allows); each further `RCPT` is answered `452 4.5.3`, and the sending server sends those in another transaction.',
  }),
  inboundSecret: variable({
    env: 'INBOUND_SECRET',
    section: 'inbound',
    shown: 'none',
    read: (env, name) => optional(env, name, /^.{24,}$/s, 'must be at least 24 characters'),
    doc: 'Bearer secret of the HTTP intake `POST /api/v1/inbound/raw` (24+ characters); unset, the intake answers 401.',
  }),
  rspamdUrl: variable({
    env: 'RSPAMD_URL',
    section: 'inbound',
    shown: 'none',
    read: (env, name) => url(env, name, null, ['http:', 'https:']),
    doc: "rspamd's HTTP address (`http://127.0.0.1:11333`): each received message is scored there (`/checkv2`) and `email.received` carries `spam` ([spam scoring](inbound.md#spam-scoring)); unset: no scoring.",
  }),
  systemFrom: variable({
    env: 'SYSTEM_FROM',
    section: 'operations',
    shown: 'none',
    read: (env, name) =>
      optional(
        env,
        name,
        /^(?:[^<>\r\n]*<[^<>@\s]+@[^<>@\s]+>|[^<>@\s]+@[^<>@\s]+)$/,
        'must be an address or "Name <address>"',
        { trim: true, quote: true },
      ),
    doc: "Sender of the emails Tern sends an organization's admins about its organization events (`organization.paused`, `webhook.disabled`, …): an address or `Name <address>`. The email is sent through the organization's own domain, so the address's domain must be a verified domain of that organization; when it is unset, or the domain is not one of the organization's verified domains, no email is sent (the webhooks still fire) and the worker logs `ORG_EVENT_MAIL_NO_SENDER` or `ORG_EVENT_MAIL_SENDER_UNVERIFIED`.",
  }),
  retentionPurgeSeconds: variable({
    env: 'RETENTION_PURGE_SECONDS',
    section: 'operations',
    default: 300,
    read: (env, name, d) => positive(env, name, d),
    doc: "Interval of the retention purge (content older than each organization's `retention.content_days`, events and webhook deliveries older than `retention.events_days`).",
  }),
  retentionBatchSize: variable({
    env: 'RETENTION_BATCH_SIZE',
    section: 'operations',
    default: 500,
    read: (env, name, d) => positive(env, name, d, true),
    doc: "Rows one purge statement handles; small batches keep each statement's locks and I/O short.",
  }),
  retentionBudgetSeconds: variable({
    env: 'RETENTION_BUDGET_SECONDS',
    section: 'operations',
    default: 10,
    read: (env, name, d) => positive(env, name, d),
    doc: 'Longest one purge run works; what is left waits for the next run.',
  }),
  retentionPauseMs: variable({
    env: 'RETENTION_PAUSE_MS',
    section: 'operations',
    default: 20,
    read: (env, name, d) => nonNegative(env, name, d),
    doc: 'Pause between two purge batches (0: none), leaving Postgres to the sending path.',
  }),
  domainRecheckHours: variable({
    env: 'DOMAIN_RECHECK_HOURS',
    section: 'operations',
    default: 6,
    read: (env, name, d) => nonNegativeNumber(env, name, d),
    doc: 'How often the worker looks up again the DNS records of each verified or failed domain ([Re-checks](api/domains.md#re-checks)); fractions allowed, `0` turns the re-checks off. A domain that stops verifying fires `domain.failed`.',
  }),
  rblZones: variable({
    env: 'RBL_ZONES',
    section: 'operations',
    shown: 'none',
    read: (env, name) => zoneList(env, name),
    doc: "DNS blocklists the sending addresses (every IP-pool address and the host's public addresses) are looked up in, comma-separated, e.g. `zen.spamhaus.org,bl.spamcop.net` ([Reputation watch](operations.md#reputation-watch)); empty: addresses are not watched.",
  }),
  dblZones: variable({
    env: 'DBL_ZONES',
    section: 'operations',
    shown: 'none',
    read: (env, name) => zoneList(env, name),
    doc: 'Domain blocklists each verified domain is looked up in, comma-separated, e.g. `dbl.spamhaus.org`; empty: domains are not watched.',
  }),
  rblCheckMinutes: variable({
    env: 'RBL_CHECK_MINUTES',
    section: 'operations',
    default: 30,
    read: (env, name, d) => positive(env, name, d),
    doc: 'Minutes between two reputation checks (one worker process checks at a time); fractions allowed. The look-ups go through `DNS_SERVERS` when set.',
  }),
};

type Variables = typeof VARIABLES;
/** The configuration of a Procfile process (web, worker, relay, mx): SECRET_KEY is required. */
export type Config = { [K in keyof Variables]: ReturnType<Variables[K]['read']> };
/**
 * The configuration without the install secret: what `tern` commands (none signs a token) and the
 * `npm start` launcher (which generates the secret) read. Every Procfile process reads `Config`.
 */
export type ToolConfig = Omit<Config, 'secretKey'>;

/** Every environment variable loadConfig reads. */
export const CONFIG_VARIABLES: readonly string[] = Object.values(VARIABLES).map((v) => v.env);

function readAll(env: Env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(VARIABLES) as [string, Variable<unknown, unknown>][]) {
    out[key] = v.read(env, v.env, v.default);
  }
  return out as Config;
}

/**
 * The configuration of a Procfile process (web, worker, relay, mx): SECRET_KEY is required whatever
 * NODE_ENV says, as nothing else stops a forged VERP bounce or unsubscribe link (DESIGN §12).
 */
export function loadConfig(env: Env = process.env): Config {
  const config = readAll(env);
  if (config.secretKey === '') {
    throw new ConfigError(
      'SECRET_KEY',
      `is required: ${MIN_SECRET_LENGTH} or more random characters (openssl rand -base64 48), the same in every process`,
    );
  }
  return config;
}

/** Every setting but the install secret (SECRET_KEY is checked when set, not required). */
export function loadToolConfig(env: Env = process.env): ToolConfig {
  const { secretKey: _secret, ...config } = readAll(env);
  return config;
}

/**
 * Variables documented beside the others but read elsewhere (by `npm start` and the `tern` CLI,
 * api/cli/data-dir.ts), with their row of docs/configuration.md.
 */
const OTHER_VARIABLES: { env: string; section: Section; shown: string; doc: string }[] = [
  {
    env: 'TERN_DATA_DIR',
    section: 'services',
    shown: '`.data` in the checkout',
    doc: '`npm start` and the `tern` CLI only: where the launcher keeps the embedded Postgres and Redis data, the generated `SECRET_KEY` and the `env` file the CLI reads. The Procfile processes do not read it.',
  },
];

function shownDefault(d: unknown): string {
  return `\`${Array.isArray(d) ? d.join(',') : String(d)}\``;
}

/** The tables of docs/configuration.md, one markdown table per section, from VARIABLES. */
export function configTables(): Record<Section, string> {
  const rows: Record<Section, string[]> = { services: [], delivery: [], relay: [], inbound: [], operations: [] };
  const all = [...(Object.values(VARIABLES) as Variable<unknown, unknown>[]), ...OTHER_VARIABLES];
  all.forEach((v, i) => {
    if ('sameRow' in v && v.sameRow) return;
    const next = all[i + 1];
    const names = next && 'sameRow' in next && next.sameRow ? [v.env, next.env] : [v.env];
    const shown = v.shown ?? shownDefault('default' in v ? v.default : undefined);
    rows[v.section].push(`| ${names.map((n) => `\`${n}\``).join(', ')} | ${shown} | ${v.doc ?? ''} |`);
  });
  const head = '| Variable | Default | Meaning |\n|---|---|---|\n';
  return Object.fromEntries(Object.entries(rows).map(([s, r]) => [s, head + r.join('\n')])) as Record<Section, string>;
}
