// The one typed configuration of every Tern process (DESIGN §2). Parsed once at start; a bad
// value stops the process with a message that names the variable.

export interface Config {
  databaseUrl: string;
  /** Most Postgres connections of one process's pool (DATABASE_POOL_MAX, default 10). */
  databasePoolMax: number;
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
  /** Host name this install's MX answers on (the target of the MX records domains publish). */
  mxHost: string;
  /** Name sent in EHLO on outbound SMTP (HELO_NAME, default MX_HOST). */
  heloName: string;
  /** Deferred recipients are retried until this many hours after the message was created. */
  deliveryMaxAgeHours: number;
  /** Retry back-off schedule in seconds; the last value repeats (DELIVERY_RETRY_SECONDS). */
  deliveryRetrySeconds: number[];
  /** How often a message held by a paused organization is looked at again, in seconds. */
  deliveryPauseRecheckSeconds: number;
  /** Most simultaneous outbound connections to one MX host or smarthost, per worker process. */
  outboundConnectionsPerHost: number;
  /** Delivery jobs one worker process runs at once. */
  deliveryConcurrency: number;
  /** Seconds between runs of the delivery sweeper (DELIVERY_SWEEP_SECONDS, default 60). */
  deliverySweepSeconds: number;
  /** A recipient due this long with no live job is re-enqueued (DELIVERY_SWEEP_GRACE_SECONDS, 120). */
  deliverySweepGraceSeconds: number;
  /** Largest inbound message the MX (and the HTTP intake) accepts. */
  inboundMaxBytes: number;
  /** Bearer secret of POST /api/v1/inbound/raw; null disables the HTTP intake. */
  inboundSecret: string | null;
  /** Largest message the SMTP relay accepts, in bytes (enforced on the data stream). */
  relayMaxBytes: number;
  /** PEM certificate and key files of the relay; both null = a self-signed one under .data/. */
  relayTlsCert: string | null;
  relayTlsKey: string | null;
  /** Implicit-TLS (SMTPS) port of the relay; null = off. */
  relayTlsPort: number | null;
  /** Development only: lets AUTH run on a connection without TLS. */
  relayAllowInsecureAuth: boolean;
}

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

export function loadConfig(env: Env = process.env): Config {
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
  if (secretKey === '' && env.NODE_ENV === 'production') {
    throw new ConfigError('SECRET_KEY', 'must be set in production (32 or more random characters)');
  }
  if (secretKey !== '' && secretKey.length < 32) {
    throw new ConfigError('SECRET_KEY', 'must be at least 32 characters');
  }
  const relayTlsCert = str(env, 'RELAY_TLS_CERT', '') || null;
  const relayTlsKey = str(env, 'RELAY_TLS_KEY', '') || null;
  if ((relayTlsCert === null) !== (relayTlsKey === null)) {
    throw new ConfigError(
      relayTlsCert ? 'RELAY_TLS_KEY' : 'RELAY_TLS_CERT',
      'RELAY_TLS_CERT and RELAY_TLS_KEY go together',
    );
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
  return {
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/tern', ['postgres:', 'postgresql:'])!,
    databasePoolMax: positive(env, 'DATABASE_POOL_MAX', 10, true),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:'])!,
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
    // Development default only: production refuses to start without SECRET_KEY (above).
    secretKey: secretKey || 'tern-development-secret-not-for-production-use',
    mxHost,
    heloName: str(env, 'HELO_NAME', mxHost),
    deliveryMaxAgeHours: positive(env, 'DELIVERY_MAX_AGE_HOURS', 72),
    deliveryRetrySeconds: secondsList(env, 'DELIVERY_RETRY_SECONDS', [60, 300, 900, 1800, 3600, 7200, 14400]),
    deliveryPauseRecheckSeconds: positive(env, 'DELIVERY_PAUSE_RECHECK_SECONDS', 60),
    outboundConnectionsPerHost: positive(env, 'OUTBOUND_CONNECTIONS_PER_HOST', 5, true),
    deliveryConcurrency: positive(env, 'DELIVERY_CONCURRENCY', 50, true),
    deliverySweepSeconds: positive(env, 'DELIVERY_SWEEP_SECONDS', 60),
    deliverySweepGraceSeconds: positive(env, 'DELIVERY_SWEEP_GRACE_SECONDS', 120),
    inboundMaxBytes: Number(inboundMax),
    inboundSecret: inboundSecret || null,
    relayMaxBytes: positive(env, 'RELAY_MAX_BYTES', 40 * 1024 * 1024, true),
    relayTlsCert,
    relayTlsKey,
    relayTlsPort: env.RELAY_TLS_PORT ? port(env, 'RELAY_TLS_PORT', 0) : null,
    relayAllowInsecureAuth: bool(env, 'RELAY_ALLOW_INSECURE_AUTH', false),
  };
}
