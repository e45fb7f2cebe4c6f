// MTA-STS (RFC 8461): a recipient domain's policy, found through its `_mta-sts.<domain>` TXT
// record and fetched from `https://mta-sts.<domain>/.well-known/mta-sts.txt` over verified TLS
// (at most 64 KB, 10 s, no redirects). A policy is cached by its id until its max_age, in a store
// shared by every worker (Redis), and fetched again when the TXT record announces a new id. A
// failed look-up or fetch keeps the cached policy while it is valid; with none cached, the domain
// has no policy (RFC 8461 §5.1). What the policy asks of a delivery is decided in tls-policy.ts.
import type { Resolver } from 'node:dns/promises';
import { request } from 'node:https';
import { parsePolicy, resolvePolicy } from 'mailauth/lib/mta-sts.js';

export interface StsPolicy {
  /** The id of the TXT record the policy was fetched under. */
  id: string;
  mode: 'enforce' | 'testing' | 'none';
  /** MX host patterns (`mx.example.com`, `*.example.com`), lower case. */
  mx: string[];
  maxAge: number;
  /** Epoch ms after which the policy is no longer used. */
  expiresAt: number;
}

/** Where policies are kept between deliveries, shared by every worker. */
export interface PolicyStore {
  get(domain: string): Promise<StsPolicy | null>;
  set(domain: string, policy: StsPolicy): Promise<void>;
}

/** The commands of a Redis connection the store uses. */
interface RedisLike {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, mode: 'PX', ms: number): Promise<unknown>;
}

export class RedisPolicyStore implements PolicyStore {
  constructor(
    private readonly redis: RedisLike,
    private readonly keyOf: (domain: string) => string,
  ) {}

  async get(domain: string): Promise<StsPolicy | null> {
    const json = await this.redis.get(this.keyOf(domain));
    return json ? (JSON.parse(json) as StsPolicy) : null;
  }

  async set(domain: string, policy: StsPolicy): Promise<void> {
    const ms = policy.expiresAt - Date.now();
    if (ms > 0) await this.redis.set(this.keyOf(domain), JSON.stringify(policy), 'PX', ms);
  }
}

const POLICY_MAX_BYTES = 64 * 1024;
const POLICY_FETCH_MS = 10_000;
/** A policy that could not be fetched is not asked for again (by this process) for this long. */
const RETRY_FETCH_MS = 5 * 60_000;

export interface MtaStsOptions {
  /** Trust anchors for the policy host's certificate (default: Node's store, with NODE_EXTRA_CA_CERTS). */
  ca?: string[];
  /** HTTPS port of policy hosts (443). */
  port?: number;
  /**
   * Told when a domain announces a policy (TXT id) that cannot be fetched or parsed; `cached`
   * says whether a previous policy stays in force meanwhile.
   */
  onFetchError?: (domain: string, id: string, err: unknown, cached: boolean) => void;
}

function notFound(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'ENOTFOUND' || code === 'ENODATA';
}

export class MtaSts {
  /** `<domain> <id>` whose fetch failed, and until when it is not tried again. */
  private readonly failed = new Map<string, number>();

  constructor(
    private readonly resolver: Resolver,
    private readonly store: PolicyStore,
    private readonly opts: MtaStsOptions = {},
  ) {}

  /** The domain's policy in force now, or null when it has none (or none could be had). */
  async policy(domain: string): Promise<StsPolicy | null> {
    domain = domain.toLowerCase();
    const stored = await this.store.get(domain).catch(() => null);
    const cached = stored && stored.expiresAt > Date.now() ? stored : null;
    let id: string | false;
    try {
      id = await resolvePolicy(domain, {
        resolver: (name: string, type: string) =>
          type === 'TXT' ? this.resolver.resolveTxt(name) : Promise.reject(new Error(`no ${type} look-up`)),
      });
    } catch {
      return cached;
    }
    // No record: a cached policy stays in force until it expires (RFC 8461 §3.2).
    if (!id || cached?.id === id) return cached;
    // A policy host that fails (or hangs for 10 s) is not asked again at every routing.
    const attempt = `${domain} ${id}`;
    if ((this.failed.get(attempt) ?? 0) > Date.now()) return cached;
    try {
      const text = await this.fetch(domain);
      const parsed = parsePolicy(text);
      const maxAge = parsed.maxAge ?? 0; // parsePolicy refuses a policy without one
      const policy: StsPolicy = {
        id,
        mode: parsed.mode as StsPolicy['mode'],
        mx: parsed.mx ?? [],
        maxAge,
        expiresAt: Date.now() + maxAge * 1000,
      };
      await this.store.set(domain, policy).catch(() => {});
      return policy;
    } catch (err) {
      if (this.failed.size >= 10_000) this.failed.clear();
      this.failed.set(attempt, Date.now() + RETRY_FETCH_MS);
      this.opts.onFetchError?.(domain, id, err, cached !== null);
      return cached;
    }
  }

  /** The policy file's text: 200, text/plain, verified TLS, size and time bounded. */
  private async fetch(domain: string): Promise<string> {
    const host = `mta-sts.${domain}`;
    const [address] = await this.resolver.resolve4(host).catch(async (err: unknown) => {
      if (!notFound(err)) throw err;
      return await this.resolver.resolve6(host);
    });
    if (!address) throw new Error(`${host} has no address`);
    return await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: address,
          port: this.opts.port ?? 443,
          path: '/.well-known/mta-sts.txt',
          method: 'GET',
          servername: host,
          headers: { host },
          rejectUnauthorized: true,
          ...(this.opts.ca ? { ca: this.opts.ca } : {}),
          timeout: POLICY_FETCH_MS,
        },
        (res) => {
          // Redirects are not followed (RFC 8461 §3.3).
          if (res.statusCode !== 200) {
            res.resume();
            return reject(new Error(`${host} answered HTTP ${res.statusCode}`));
          }
          if (!/^text\/plain\b/i.test(res.headers['content-type'] ?? '')) {
            res.resume();
            return reject(new Error(`${host} served ${res.headers['content-type']}, not text/plain`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > POLICY_MAX_BYTES) {
              req.destroy(new Error(`${host}'s policy is over ${POLICY_MAX_BYTES} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
        },
      );
      // The whole fetch, not only an idle socket, is bounded.
      const timer = setTimeout(
        () => req.destroy(new Error(`${host} took over ${POLICY_FETCH_MS} ms`)),
        POLICY_FETCH_MS,
      );
      req.on('close', () => clearTimeout(timer));
      req.on('timeout', () => req.destroy(new Error(`${host} took over ${POLICY_FETCH_MS} ms`)));
      req.on('error', reject);
      req.end();
    });
  }
}
