// Where mail for a domain goes: the smarthost when SMTP_SMARTHOST is set, else the domain's MX
// hosts by preference (looked up through DNS_SERVERS), with the RFC 5321 §5.1 implicit MX (the
// domain's own A/AAAA) when there is no MX, and RFC 7505 null MX ("MX 0 .") as a hard bounce.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import { connectionFailure, fromReply } from './reply.js';
import type { Route, Target } from './types.js';

export function smarthostTarget(url: string): Target {
  const u = new URL(url);
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    auth: u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined,
    // `?tls_verify=false` for a smarthost with a self-signed certificate on a private network.
    verifyTls: u.searchParams.get('tls_verify') !== 'false',
  };
}

export function createResolver(dnsServers: string[]): Resolver {
  const resolver = new Resolver({ timeout: 5000, tries: 2 });
  if (dnsServers.length > 0) resolver.setServers(dnsServers);
  return resolver;
}

const NOT_FOUND = new Set(['ENODATA', 'ENOTFOUND']);

function code(err: unknown): string {
  return (err as { code?: string }).code ?? '';
}

export class Router {
  private readonly resolver: Resolver;
  private readonly smarthost: Target | null;

  constructor(private readonly config: Pick<Config, 'smtpSmarthost' | 'dnsServers' | 'outboundPort'>) {
    this.resolver = createResolver(config.dnsServers);
    this.smarthost = config.smtpSmarthost ? smarthostTarget(config.smtpSmarthost) : null;
  }

  async route(domain: string): Promise<Route> {
    if (this.smarthost) return { domain, targets: [this.smarthost], mxHosts: [], smarthost: true };
    const target = (host: string): Target => ({
      host,
      port: this.config.outboundPort,
      secure: false,
      verifyTls: false,
    });
    let mx: { exchange: string; priority: number }[];
    try {
      mx = await this.resolver.resolveMx(domain);
    } catch (err) {
      if (!NOT_FOUND.has(code(err))) return { domain, targets: [], mxHosts: [], failure: dnsFailure(domain, err) };
      mx = [];
    }
    if (mx.length === 1 && (mx[0]!.exchange === '' || mx[0]!.exchange === '.')) {
      const failure = fromReply(
        { code: 556, enhanced: '5.1.10', text: `${domain} does not accept mail (null MX)` },
        null,
      );
      return { domain, targets: [], mxHosts: [], failure };
    }
    if (mx.length > 0) {
      // Equal preferences are shuffled to spread load, as RFC 5321 §5.1 asks.
      const hosts = mx
        .map((m) => ({ ...m, r: Math.random() }))
        .sort((a, b) => a.priority - b.priority || a.r - b.r)
        .map((m) => m.exchange.replace(/\.$/, '').toLowerCase());
      const targets = (await Promise.all(hosts.map((h) => this.addresses(h)))).flatMap((addrs, i) =>
        // An MX named by address (seen on small setups) gives no name for TLS SNI.
        addrs.map((a) => (isIP(hosts[i]!) ? target(a) : { ...target(a), name: hosts[i] })),
      );
      return { domain, targets, mxHosts: hosts };
    }
    return await this.implicitMx(domain, target);
  }

  /** A/AAAA of an MX host; an unresolvable host is skipped (the next MX gets its chance). */
  private async addresses(host: string): Promise<string[]> {
    if (/^[\d.]+$|:/.test(host)) return [host];
    const found = await Promise.allSettled([this.resolver.resolve4(host), this.resolver.resolve6(host)]);
    return found.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  }

  private async implicitMx(domain: string, target: (host: string) => Target): Promise<Route> {
    const lookups = await Promise.allSettled([this.resolver.resolve4(domain), this.resolver.resolve6(domain)]);
    const addrs = lookups.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    if (addrs.length > 0) return { domain, targets: addrs.map(target), mxHosts: [] };
    const temporary = lookups.find((r) => r.status === 'rejected' && !NOT_FOUND.has(code(r.reason)));
    if (temporary && temporary.status === 'rejected') {
      return { domain, targets: [], mxHosts: [], failure: dnsFailure(domain, temporary.reason) };
    }
    const failure = fromReply({ code: 550, enhanced: '5.1.2', text: `${domain} has no MX, A or AAAA record` }, null);
    return { domain, targets: [], mxHosts: [], failure };
  }
}

function dnsFailure(domain: string, err: unknown) {
  return connectionFailure(
    Object.assign(new Error(`DNS look-up of ${domain} failed`), { code: code(err) || 'EDNS' }),
    null,
  );
}
