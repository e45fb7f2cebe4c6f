// The one typed configuration of every Tern process (DESIGN §2). Parsed once at start; a bad
// value stops the process with a message that names the variable.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstHostUrl } from './db/url.js';
import { parseClusterUrl, parseSentinelUrl } from './redis-url.js';

export interface Config {
  databaseUrl: string;
  /**
   * Most Postgres connections of one process (DATABASE_POOL_MAX, default 10); a worker process
   * with a broadcast thread splits them between its two pools (workers/broadcast-thread.ts).
   */
  databasePoolMax: number;
  /**
   * What sits between Tern and Postgres (DATABASE_POOLER): `none` (a direct connection or a
   * session pooler) or `transaction` (PgBouncer in transaction mode: no prepared statements, no
   * session settings).
   */
  databasePooler: DatabasePooler;
  /**
   * One Redis (`redis://`, `rediss://`), a Redis Cluster (`redis+cluster://h1:p1,h2:p2`) or the
   * master of a Sentinel set (`redis+sentinel://h1:p1,h2:p2/<master name>`).
   */
  redisUrl: string;
  /** Prefix of every Redis key and BullMQ queue; tests give each run its own. */
  redisPrefix: string;
  port: number;
  baseUrl: string;
  brand: string;
  relayPort: number;
  mxPort: number;
  smtpSmarthost: string | null;
  outboundPort: number;
  dnsServers: string[];
  webhookAllowPrivate: boolean;
  workerQueues: string[] | null;
  logLevel: string;
  /** Largest JSON body accepted on routes that do not declare their own limit. */
  bodyLimitBytes: number;
  /** Install secret for HMACs every process must agree on (VERP, tracking and unsubscribe tokens). */
  secretKey: string;
  /**
   * The SECRET_KEY before a change (SECRET_KEY_PREVIOUS): opens secrets at rest sealed with it
   * until `tern secrets rotate` seals them again (shared/secrets.ts); null when unset.
   */
  secretKeyPrevious: string | null;
  /** Behind a reverse proxy: client IP and protocol from X-Forwarded-For / -Proto (TRUST_PROXY). */
  trustProxy: boolean;
  /** Host name this install's MX answers on (the target of the MX records domains publish). */
  mxHost: string;
  /** Name sent in EHLO on outbound SMTP (HELO_NAME, default MX_HOST). */
  heloName: string;
  /** Deferred recipients are retried until this many hours after the message was created. */
  deliveryMaxAgeHours: number;
  /** Retry back-off schedule in seconds; the last value repeats (DELIVERY_RETRY_SECONDS). */
  deliveryRetrySeconds: number[];
  /** Webhook retry schedule in seconds, one entry per retry (WEBHOOK_RETRY_SECONDS). */
  webhookRetrySeconds: number[];
  /** How often a message held by a paused organization is looked at again, in seconds. */
  deliveryPauseRecheckSeconds: number;
  /** Most simultaneous outbound connections to one MX host or smarthost, per worker process. */
  outboundConnectionsPerHost: number;
  /** Delivery jobs one worker process runs at once, per stream. */
  deliveryConcurrency: number;
  /**
   * Share (0–1) of DELIVERY_CONCURRENCY broadcast deliveries may hold in a worker process while it
   * delivers transactional mail (BROADCAST_MAX_SHARE, default 0.5; workers/delivery/broadcast-share.ts).
   */
  broadcastMaxShare: number;
  /**
   * Broadcast messages waiting in the delivery-broadcast queue past which broadcasts store no
   * next batch until it drains below (BROADCAST_QUEUE_MAX, default 2000; 0: never wait).
   */
  broadcastQueueMax: number;
  /** Seconds between runs of the delivery sweeper (DELIVERY_SWEEP_SECONDS, default 15). */
  deliverySweepSeconds: number;
  /** A recipient due this long with no live job is re-enqueued (DELIVERY_SWEEP_GRACE_SECONDS, 15). */
  deliverySweepGraceSeconds: number;
  /** Where worker processes journal accepted messages (DELIVERY_JOURNAL_DIR; workers/delivery/journal.ts). */
  deliveryJournalDir: string;
  /** Largest inbound message the MX (and the HTTP intake) accepts. */
  inboundMaxBytes: number;
  /** Bearer secret of POST /api/v1/inbound/raw; null disables the HTTP intake. */
  inboundSecret: string | null;
  /** Most MIME parts of a message that is parsed (INBOUND_PARSE_MAX_PARTS; shared/mail/bounded-parse.ts). */
  inboundParseMaxParts: number;
  /** Deepest nesting of multiparts and embedded messages parsed (INBOUND_PARSE_MAX_DEPTH). */
  inboundParseMaxDepth: number;
  /** Longest parse of one message, in seconds (INBOUND_PARSE_SECONDS). */
  inboundParseSeconds: number;
  /** Heap of one parse thread, in MiB (INBOUND_PARSE_MEMORY_MB). */
  inboundParseMemoryMb: number;
  /** DMARC reports read per reporting domain and organization in an hour (DMARC_REPORTER_HOURLY_MAX). */
  dmarcReporterHourlyMax: number;
  /** Largest message the SMTP relay accepts, in bytes (enforced on the data stream). */
  relayMaxBytes: number;
  /** PEM certificate and key files of the relay; both null = a self-signed one under .data/. */
  relayTlsCert: string | null;
  relayTlsKey: string | null;
  /** PEM certificate and key files the MX offers with STARTTLS; both null = smtp-server's built-in test one. */
  mxTlsCert: string | null;
  mxTlsKey: string | null;
  /** Implicit-TLS (SMTPS) port of the relay; null = off. */
  relayTlsPort: number | null;
  /** Development only: lets AUTH run on a connection without TLS. */
  relayAllowInsecureAuth: boolean;
  /** Most SMTP sessions the relay holds at once; one more is answered 421 (RELAY_MAX_CLIENTS, 1000). */
  relayMaxClients: number;
  /** Most SMTP sessions the MX holds at once; one more is answered 421 (MX_MAX_CLIENTS, 1000). */
  mxMaxClients: number;
  /** Most recipients of one MX transaction, ≥ 100 (RFC 5321 §4.5.3.1.8); more: 452 (MX_MAX_RECIPIENTS, 100). */
  mxMaxRecipients: number;
  /** Bearer token of GET /metrics and GET /healthz?verbose=1; null = no token. */
  prometheusToken: string | null;
  /** Without a token, serve GET /metrics and /healthz?verbose=1 to anyone (else they answer 403). */
  prometheusPublic: boolean;
  /**
   * How long a send whose connection to Postgres broke mid-insert keeps trying to learn whether
   * it was stored before answering 504 outcome_unknown (STORE_CONFIRM_SECONDS, default 15).
   */
  storeConfirmSeconds: number;
  /** Contact imports and exports one worker process runs at once (CONTACT_BULK_CONCURRENCY, 1). */
  contactBulkConcurrency: number;
  /** Seconds between sweeps for stalled imports and exports (CONTACT_BULK_SWEEP_SECONDS, 30). */
  contactBulkSweepSeconds: number;
  /**
   * Sender of the emails Tern sends an organization's admins about its organization events
   * (SYSTEM_FROM, "Name <address>" or an address); null = those emails are not sent.
   */
  systemFrom: string | null;
  /** Seconds between runs of the retention purge (RETENTION_PURGE_SECONDS, default 300). */
  retentionPurgeSeconds: number;
  /** Rows one purge statement handles (RETENTION_BATCH_SIZE, default 500). */
  retentionBatchSize: number;
  /** Longest one purge run works before leaving the rest to the next (RETENTION_BUDGET_SECONDS, 10). */
  retentionBudgetSeconds: number;
  /** Pause between two purge batches, in milliseconds (RETENTION_PAUSE_MS, default 20). */
  retentionPauseMs: number;
  /**
   * Hours between two scheduled DNS re-checks of a verified or failed domain
   * (DOMAIN_RECHECK_HOURS, default 6; 0 turns the re-checks off).
   */
  domainRecheckHours: number;
  /**
   * DNS blocklists the sending addresses are looked up in (RBL_ZONES, comma-separated zones such
   * as zen.spamhaus.org; empty: addresses are not watched). docs/operations.md "Reputation watch".
   */
  rblZones: string[];
  /** Domain blocklists verified domains are looked up in (DBL_ZONES, e.g. dbl.spamhaus.org; empty: none). */
  dblZones: string[];
  /** Minutes between two reputation checks (RBL_CHECK_MINUTES, default 30). */
  rblCheckMinutes: number;
  /** rspamd's HTTP address (RSPAMD_URL): each inbound message is scored there; null = not scored. */
  rspamdUrl: string | null;
}

/**
 * The configuration without the install secret: what `tern` commands (none signs a token) and the
 * `npm start` launcher (which generates the secret) read. Every Procfile process reads `Config`.
 */
export type ToolConfig = Omit<Config, 'secretKey'>;

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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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

/**
 * The journal's folder when DELIVERY_JOURNAL_DIR is unset: the state directory systemd gives a
 * unit with StateDirectory= (STATE_DIRECTORY, its first folder), else the temporary folder (a
 * checkout's npm start; `tern doctor` warns about it in production).
 */
function defaultJournalDir(env: Env, brand: string): string {
  const state = env.STATE_DIRECTORY?.split(':')[0];
  return state ? join(state, 'delivery-journal') : join(tmpdir(), `${brand}-delivery-journal`);
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

/**
 * The configuration of a Procfile process (web, worker, relay, mx): SECRET_KEY is required whatever
 * NODE_ENV says, as nothing else stops a forged VERP bounce or unsubscribe link (DESIGN §12).
 */
export function loadConfig(env: Env = process.env): Config {
  const config = loadToolConfig(env);
  const secretKey = str(env, 'SECRET_KEY', '');
  if (secretKey === '') {
    throw new ConfigError(
      'SECRET_KEY',
      `is required: ${MIN_SECRET_LENGTH} or more random characters (openssl rand -base64 48), the same in every process`,
    );
  }
  return { ...config, secretKey };
}

/** Every setting but the install secret (SECRET_KEY is checked when set, not required). */
export function loadToolConfig(env: Env = process.env): ToolConfig {
  const brand = str(env, 'BRAND', 'tern');
  if (!/^[a-z][a-z0-9]{1,15}$/.test(brand)) {
    throw new ConfigError('BRAND', `must be 2-16 lower-case letters or digits, got "${brand}"`);
  }
  const logLevel = str(env, 'LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const httpPort = port(env, 'PORT', 3000);
  const queues = str(env, 'WORKER_QUEUES', '');
  const prefix = str(env, 'REDIS_PREFIX', brand);
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) {
    throw new ConfigError('REDIS_PREFIX', `must be 1-64 of A-Z a-z 0-9 _ . : -, got "${prefix}"`);
  }
  const bodyLimit = str(env, 'BODY_LIMIT_BYTES', String(1024 * 1024));
  if (!/^\d+$/.test(bodyLimit) || Number(bodyLimit) < 1024) {
    throw new ConfigError('BODY_LIMIT_BYTES', `must be an integer ≥ 1024, got "${bodyLimit}"`);
  }
  const secretKey = str(env, 'SECRET_KEY', '');
  if (secretKey !== '' && secretKey.length < MIN_SECRET_LENGTH) {
    throw new ConfigError('SECRET_KEY', `must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  const secretKeyPrevious = str(env, 'SECRET_KEY_PREVIOUS', '');
  if (secretKeyPrevious !== '' && secretKeyPrevious.length < MIN_SECRET_LENGTH) {
    throw new ConfigError('SECRET_KEY_PREVIOUS', `must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  const relayTlsCert = str(env, 'RELAY_TLS_CERT', '') || null;
  const relayTlsKey = str(env, 'RELAY_TLS_KEY', '') || null;
  if ((relayTlsCert === null) !== (relayTlsKey === null)) {
    throw new ConfigError(
      relayTlsCert ? 'RELAY_TLS_KEY' : 'RELAY_TLS_CERT',
      'RELAY_TLS_CERT and RELAY_TLS_KEY go together',
    );
  }
  const mxTlsCert = str(env, 'MX_TLS_CERT', '') || null;
  const mxTlsKey = str(env, 'MX_TLS_KEY', '') || null;
  if ((mxTlsCert === null) !== (mxTlsKey === null)) {
    throw new ConfigError(mxTlsCert ? 'MX_TLS_KEY' : 'MX_TLS_CERT', 'MX_TLS_CERT and MX_TLS_KEY go together');
  }
  const baseUrl = (url(env, 'BASE_URL', `http://localhost:${httpPort}`, ['http:', 'https:']) ?? '').replace(/\/+$/, '');
  const mxHost = str(env, 'MX_HOST', new URL(baseUrl).hostname);
  if (!/^[A-Za-z0-9.-]{1,253}$/.test(mxHost)) {
    throw new ConfigError('MX_HOST', `must be a host name, got "${mxHost}"`);
  }
  const inboundMax = str(env, 'INBOUND_MAX_BYTES', String(30 * 1024 * 1024));
  if (!/^\d+$/.test(inboundMax) || Number(inboundMax) < 1024) {
    throw new ConfigError('INBOUND_MAX_BYTES', `must be an integer ≥ 1024, got "${inboundMax}"`);
  }
  const inboundSecret = str(env, 'INBOUND_SECRET', '');
  if (inboundSecret !== '' && inboundSecret.length < 24) {
    throw new ConfigError('INBOUND_SECRET', 'must be at least 24 characters');
  }
  const prometheusToken = str(env, 'PROMETHEUS_TOKEN', '');
  if (prometheusToken !== '' && !/^[\x21-\x7e]{16,}$/.test(prometheusToken)) {
    throw new ConfigError('PROMETHEUS_TOKEN', 'must be 16 or more printable characters without spaces');
  }
  const systemFrom = str(env, 'SYSTEM_FROM', '').trim();
  if (systemFrom !== '' && !/^(?:[^<>\r\n]*<[^<>@\s]+@[^<>@\s]+>|[^<>@\s]+@[^<>@\s]+)$/.test(systemFrom)) {
    throw new ConfigError('SYSTEM_FROM', `must be an address or "Name <address>", got "${systemFrom}"`);
  }
  return {
    databaseUrl: databaseUrl(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/tern'),
    databasePoolMax: positive(env, 'DATABASE_POOL_MAX', 10, true),
    databasePooler: oneOf(env, 'DATABASE_POOLER', DATABASE_POOLERS, 'none'),
    redisUrl: redisUrl(env, 'REDIS_URL', 'redis://127.0.0.1:6379'),
    redisPrefix: prefix,
    port: httpPort,
    baseUrl,
    brand,
    relayPort: port(env, 'RELAY_PORT', 2587),
    mxPort: port(env, 'MX_PORT', 2525),
    smtpSmarthost: url(env, 'SMTP_SMARTHOST', null, ['smtp:', 'smtps:']),
    outboundPort: port(env, 'OUTBOUND_PORT', 25),
    dnsServers: hostPortList(env, 'DNS_SERVERS'),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    workerQueues: queues
      ? queues
          .split(',')
          .map((q) => q.trim())
          .filter(Boolean)
      : null,
    logLevel,
    bodyLimitBytes: Number(bodyLimit),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    mxHost,
    heloName: str(env, 'HELO_NAME', mxHost),
    deliveryMaxAgeHours: positive(env, 'DELIVERY_MAX_AGE_HOURS', 72),
    deliveryRetrySeconds: secondsList(env, 'DELIVERY_RETRY_SECONDS', [60, 300, 900, 1800, 3600, 7200, 14400]),
    webhookRetrySeconds: secondsList(env, 'WEBHOOK_RETRY_SECONDS', [5, 300, 1800, 7200, 18000, 36000, 36000]),
    deliveryPauseRecheckSeconds: positive(env, 'DELIVERY_PAUSE_RECHECK_SECONDS', 60),
    outboundConnectionsPerHost: positive(env, 'OUTBOUND_CONNECTIONS_PER_HOST', 5, true),
    deliveryConcurrency: positive(env, 'DELIVERY_CONCURRENCY', 50, true),
    broadcastMaxShare: share(env, 'BROADCAST_MAX_SHARE', 0.5),
    broadcastQueueMax: nonNegative(env, 'BROADCAST_QUEUE_MAX', 2000),
    deliverySweepSeconds: positive(env, 'DELIVERY_SWEEP_SECONDS', 15),
    deliverySweepGraceSeconds: positive(env, 'DELIVERY_SWEEP_GRACE_SECONDS', 15),
    deliveryJournalDir: str(env, 'DELIVERY_JOURNAL_DIR', defaultJournalDir(env, brand)),
    inboundMaxBytes: Number(inboundMax),
    inboundSecret: inboundSecret || null,
    inboundParseMaxParts: between(env, 'INBOUND_PARSE_MAX_PARTS', 500, 1, 900),
    inboundParseMaxDepth: between(env, 'INBOUND_PARSE_MAX_DEPTH', 50, 1, 100),
    inboundParseSeconds: positive(env, 'INBOUND_PARSE_SECONDS', 10),
    inboundParseMemoryMb: between(env, 'INBOUND_PARSE_MEMORY_MB', 256, 32, 16384),
    dmarcReporterHourlyMax: positive(env, 'DMARC_REPORTER_HOURLY_MAX', 30, true),
    relayMaxBytes: positive(env, 'RELAY_MAX_BYTES', 40 * 1024 * 1024, true),
    relayTlsCert,
    relayTlsKey,
    mxTlsCert,
    mxTlsKey,
    relayTlsPort: env.RELAY_TLS_PORT ? port(env, 'RELAY_TLS_PORT', 0) : null,
    relayAllowInsecureAuth: bool(env, 'RELAY_ALLOW_INSECURE_AUTH', false),
    secretKeyPrevious: secretKeyPrevious || null,
    relayMaxClients: positive(env, 'RELAY_MAX_CLIENTS', 1000, true),
    mxMaxClients: positive(env, 'MX_MAX_CLIENTS', 1000, true),
    mxMaxRecipients: atLeast(env, 'MX_MAX_RECIPIENTS', 100, 100),
    prometheusToken: prometheusToken || null,
    prometheusPublic: bool(env, 'PROMETHEUS_PUBLIC', false),
    storeConfirmSeconds: positive(env, 'STORE_CONFIRM_SECONDS', 15),
    contactBulkConcurrency: positive(env, 'CONTACT_BULK_CONCURRENCY', 1, true),
    contactBulkSweepSeconds: positive(env, 'CONTACT_BULK_SWEEP_SECONDS', 30),
    systemFrom: systemFrom || null,
    retentionPurgeSeconds: positive(env, 'RETENTION_PURGE_SECONDS', 300),
    retentionBatchSize: positive(env, 'RETENTION_BATCH_SIZE', 500, true),
    retentionBudgetSeconds: positive(env, 'RETENTION_BUDGET_SECONDS', 10),
    retentionPauseMs: nonNegative(env, 'RETENTION_PAUSE_MS', 20),
    domainRecheckHours: nonNegativeNumber(env, 'DOMAIN_RECHECK_HOURS', 6),
    rblZones: zoneList(env, 'RBL_ZONES'),
    dblZones: zoneList(env, 'DBL_ZONES'),
    rblCheckMinutes: positive(env, 'RBL_CHECK_MINUTES', 30),
    rspamdUrl: url(env, 'RSPAMD_URL', null, ['http:', 'https:']),
  };
}

/**
 * Every environment variable loadConfig reads (docs/configuration.md lists each one; a unit test
 * checks both the reads and the page against this list).
 */
export const CONFIG_VARIABLES = [
  'BASE_URL',
  'BODY_LIMIT_BYTES',
  'BRAND',
  'BROADCAST_MAX_SHARE',
  'BROADCAST_QUEUE_MAX',
  'CONTACT_BULK_CONCURRENCY',
  'CONTACT_BULK_SWEEP_SECONDS',
  'DATABASE_POOL_MAX',
  'DATABASE_POOLER',
  'DATABASE_URL',
  'DBL_ZONES',
  'DELIVERY_CONCURRENCY',
  'DELIVERY_JOURNAL_DIR',
  'DELIVERY_MAX_AGE_HOURS',
  'DELIVERY_PAUSE_RECHECK_SECONDS',
  'DELIVERY_RETRY_SECONDS',
  'DELIVERY_SWEEP_GRACE_SECONDS',
  'DELIVERY_SWEEP_SECONDS',
  'DMARC_REPORTER_HOURLY_MAX',
  'DNS_SERVERS',
  'DOMAIN_RECHECK_HOURS',
  'HELO_NAME',
  'INBOUND_MAX_BYTES',
  'INBOUND_PARSE_MAX_DEPTH',
  'INBOUND_PARSE_MAX_PARTS',
  'INBOUND_PARSE_MEMORY_MB',
  'INBOUND_PARSE_SECONDS',
  'INBOUND_SECRET',
  'LOG_LEVEL',
  'MX_HOST',
  'MX_MAX_CLIENTS',
  'MX_MAX_RECIPIENTS',
  'MX_PORT',
  'MX_TLS_CERT',
  'MX_TLS_KEY',
  'OUTBOUND_CONNECTIONS_PER_HOST',
  'OUTBOUND_PORT',
  'PORT',
  'PROMETHEUS_PUBLIC',
  'PROMETHEUS_TOKEN',
  'RBL_CHECK_MINUTES',
  'RBL_ZONES',
  'REDIS_PREFIX',
  'REDIS_URL',
  'RELAY_ALLOW_INSECURE_AUTH',
  'RELAY_MAX_BYTES',
  'RELAY_MAX_CLIENTS',
  'RELAY_PORT',
  'RELAY_TLS_CERT',
  'RELAY_TLS_KEY',
  'RELAY_TLS_PORT',
  'RETENTION_BATCH_SIZE',
  'RETENTION_BUDGET_SECONDS',
  'RETENTION_PAUSE_MS',
  'RETENTION_PURGE_SECONDS',
  'RSPAMD_URL',
  'SECRET_KEY',
  'SECRET_KEY_PREVIOUS',
  'SMTP_SMARTHOST',
  'STORE_CONFIRM_SECONDS',
  'SYSTEM_FROM',
  'TRUST_PROXY',
  'WEBHOOK_ALLOW_PRIVATE',
  'WEBHOOK_RETRY_SECONDS',
  'WORKER_QUEUES',
] as const;
