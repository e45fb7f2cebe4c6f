// Token → authorization context, with the warm-key cache of DESIGN §3: a warm key is authorized
// from process memory (no Postgres round trip); entries live ≤ 30 s and are dropped at once on
// every process when a key or its organization changes (Redis pub/sub). The HTTP API and the
// SMTP relay both authenticate through `Authenticator.authenticate`.
import { findTokenAuth, touchKey, type TokenAuthRow } from './db/keys.js';
import type { Sql } from './db/pool.js';
import { hashToken, parseToken, type Mode, type Permission } from './keys.js';
import type { Logger } from './logger.js';
import type { Redis } from './redis.js';

export interface AuthDomain {
  id: string;
  name: string;
  status: string;
  /** The development launcher's demo domain: test keys only (shared/domains/demo.ts). */
  demo: boolean;
}

export interface AuthContext {
  key: {
    id: string;
    orgId: string;
    name: string;
    mode: Mode;
    permission: Permission;
    /** Domain restriction (ids); empty = unrestricted. */
    domainIds: string[];
  };
  org: {
    id: string;
    sendingPaused: boolean;
    sendingPausedReason: string | null;
    rateLimit: { perSecond: number; burst: number };
  };
  /** Every domain of the organization. */
  domains: AuthDomain[];
}

export type AuthFailure = 'malformed' | 'unknown' | 'revoked' | 'expired';
export type AuthResult = { ok: true; auth: AuthContext } | { ok: false; reason: AuthFailure };

interface Entry {
  row: TokenAuthRow;
  auth: AuthContext;
  loadedAt: number;
}

export interface AuthenticatorOptions {
  sql: Sql;
  brand: string;
  /** Connection used to publish invalidations (may be shared with other API commands). */
  publisher: Redis;
  /** Dedicated connection in subscriber mode; null disables cross-process invalidation. */
  subscriber: Redis | null;
  channel: string;
  logger: Logger;
  ttlMs?: number;
  maxEntries?: number;
}

const NEGATIVE_TTL_MS = 5000;

export class Authenticator {
  private readonly entries = new Map<string, Entry>();
  private readonly negative = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<Entry | null>>();
  private readonly lastTouch = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /** Postgres look-ups made so far (tests and benchmarks read it). */
  dbLookups = 0;

  constructor(private readonly opts: AuthenticatorOptions) {
    this.ttlMs = opts.ttlMs ?? 30_000;
    this.maxEntries = opts.maxEntries ?? 10_000;
  }

  async start(): Promise<void> {
    const sub = this.opts.subscriber;
    if (!sub) return;
    sub.on('message', (channel: string, message: string) => {
      if (channel === this.opts.channel) this.drop(message);
    });
    // After a lost subscription, invalidations may have been missed: start cold.
    let wasReady = sub.status === 'ready';
    sub.on('ready', () => {
      if (wasReady) this.clear();
      wasReady = true;
    });
    await sub.subscribe(this.opts.channel);
  }

  async authenticate(token: string): Promise<AuthResult> {
    const warm = this.authenticateWarm(token);
    if (warm) return warm;
    const mode = parseToken(this.opts.brand, token)!;
    return judge(await this.load(hashToken(token)), mode);
  }

  /**
   * The answer for a malformed token or a warm key, without waiting for anything; null when
   * the key must be looked up (authenticate does that). The hot path of every API request.
   */
  authenticateWarm(token: string): AuthResult | null {
    const mode = parseToken(this.opts.brand, token);
    if (!mode) return { ok: false, reason: 'malformed' };
    const hit = this.entries.get(hashToken(token));
    if (!hit || Date.now() - hit.loadedAt >= this.ttlMs) return null;
    return judge(hit, mode);
  }

  /** Records that a key was used; writes last_used_at at most once a minute per key. */
  noteUse(keyId: string): void {
    const now = Date.now();
    if (now - (this.lastTouch.get(keyId) ?? 0) < 60_000) return;
    if (this.lastTouch.size >= this.maxEntries) this.lastTouch.clear();
    this.lastTouch.set(keyId, now);
    touchKey(this.opts.sql, keyId).catch((err: unknown) => {
      this.opts.logger.warn({ event: 'KEY_TOUCH_FAILED', err, keyId }, 'could not record key use');
    });
  }

  /** Announces a change of one key (revoke, rotate) to every process, this one included. */
  async invalidateKey(keyId: string): Promise<void> {
    await this.announce(`key:${keyId}`);
  }

  /** Announces a change of an organization (settings, domains) to every process. */
  async invalidateOrg(orgId: string): Promise<void> {
    await this.announce(`org:${orgId}`);
  }

  clear(): void {
    this.entries.clear();
    this.negative.clear();
  }

  private async announce(message: string): Promise<void> {
    this.drop(message);
    await this.opts.publisher.publish(this.opts.channel, message);
  }

  private drop(message: string): void {
    const [kind, id] = message.split(':', 2);
    for (const [hash, e] of this.entries) {
      if ((kind === 'key' && e.auth.key.id === id) || (kind === 'org' && e.auth.org.id === id)) {
        this.entries.delete(hash);
      }
    }
  }

  private async load(hash: string): Promise<Entry | null> {
    const now = Date.now();
    const hit = this.entries.get(hash);
    if (hit && now - hit.loadedAt < this.ttlMs) return hit;
    const miss = this.negative.get(hash);
    if (miss !== undefined && miss > now) return null;
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.fetch(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return await pending;
  }

  private async fetch(hash: string): Promise<Entry | null> {
    this.dbLookups++;
    const row = await findTokenAuth(this.opts.sql, hash);
    if (!row) {
      if (this.negative.size >= this.maxEntries) this.negative.clear();
      this.negative.set(hash, Date.now() + NEGATIVE_TTL_MS);
      return null;
    }
    const entry: Entry = { row, auth: toContext(row), loadedAt: Date.now() };
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(hash, entry);
    return entry;
  }
}

function judge(entry: Entry | null, mode: Mode): AuthResult {
  if (!entry || entry.row.mode !== mode) return { ok: false, reason: 'unknown' };
  if (entry.row.revoked_at) return { ok: false, reason: 'revoked' };
  const exp = entry.row.token_expires_at;
  if (exp && exp.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
  return { ok: true, auth: entry.auth };
}

function toContext(row: TokenAuthRow): AuthContext {
  return {
    key: {
      id: row.key_id,
      orgId: row.org_id,
      name: row.name,
      mode: row.mode,
      permission: row.permission,
      domainIds: row.domain_ids,
    },
    org: {
      id: row.org_id,
      sendingPaused: row.org_sending_paused,
      sendingPausedReason: row.org_sending_paused_reason,
      rateLimit: { perSecond: row.org_rate_limit_per_second, burst: row.org_rate_limit_burst },
    },
    domains: row.org_domains,
  };
}

/** The domains a key may use: its restriction, else every verified domain of the org (names). */
export function allowedDomains(auth: AuthContext): AuthDomain[] {
  if (auth.key.domainIds.length > 0) {
    return auth.domains.filter((d) => auth.key.domainIds.includes(d.id));
  }
  return auth.domains.filter((d) => d.status === 'verified');
}

export function isRestricted(auth: AuthContext): boolean {
  return auth.key.domainIds.length > 0;
}
