// What a recipient domain's TLS policy asks of a direct MX delivery (DESIGN §19). Without a policy
// (and for `testing` MTA-STS, which delivers and reports): opportunistic STARTTLS accepting any
// certificate. MTA-STS `enforce`: only the MX hosts the policy names, each over STARTTLS with a
// certificate valid for its name and chained to a trusted CA; anything else is a temporary
// failure whose text names MTA-STS, never a bounce and never plaintext.
import { isIP } from 'node:net';
import { rootCertificates, TLSSocket } from 'node:tls';
import { connectionFailure } from './reply.js';
import type { StsPolicy } from './mta-sts.js';
import type { Route, Target, TlsFacts } from './types.js';

/** RFC 8461 §4.1: `*.example.com` matches one label left of `example.com`, nothing more. */
export function mxAllowed(host: string, patterns: string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    const pattern = p.toLowerCase().replace(/\.$/, '');
    if (!pattern.startsWith('*.')) return pattern === name;
    const dot = name.indexOf('.');
    return dot > 0 && name.slice(dot + 1) === pattern.slice(2);
  });
}

/** The trust anchors a verified session checks against: Node's store, plus `extra` when given. */
export function trustAnchors(extra: string[] | undefined): string[] | undefined {
  return extra && extra.length > 0 ? [...rootCertificates, ...extra] : undefined;
}

/** `route` as `policy` allows it (a smarthost route or a route that already failed is unchanged). */
export function applyTlsPolicy(route: Route, policy: StsPolicy | null, ca?: string[]): Route {
  if (route.smarthost || route.failure || !policy || policy.mode === 'none') return route;
  const tls = { policy: 'mta-sts' as const, mode: policy.mode };
  if (policy.mode === 'testing') return { ...route, targets: route.targets.map((t) => ({ ...t, tlsPolicy: tls })) };
  const anchors = trustAnchors(ca);
  const targets: Target[] = route.targets
    .filter((t) => t.name && isIP(t.name) === 0 && mxAllowed(t.name, policy.mx))
    .map((t) => ({ ...t, verifyTls: true, requireTls: true, tlsPolicy: tls, ...(anchors ? { ca: anchors } : {}) }));
  if (targets.length > 0) return { ...route, targets };
  const names = route.mxHosts.length > 0 ? route.mxHosts.join(', ') : route.domain;
  const err = Object.assign(
    new Error(
      `MTA-STS (enforce) of ${route.domain}: no MX host (${names}) is allowed by its policy (mx: ${policy.mx.join(', ')})`,
    ),
    { code: 'EMTASTS' },
  );
  const facts: TlsFacts = { version: null, cipher: null, ...tls };
  return { ...route, targets: [], failure: { ...connectionFailure(err, null), tls: facts } };
}

/** The TLS of an attempt on `target` over `socket` (none: no session was had). */
export function tlsFacts(target: Target, socket: unknown): TlsFacts {
  const policy = target.tlsPolicy ?? { policy: 'none' as const, mode: target.verifyTls ? 'verified' : 'opportunistic' };
  if (!(socket instanceof TLSSocket)) return { version: null, cipher: null, ...policy };
  return { version: socket.getProtocol(), cipher: socket.getCipher()?.name ?? null, ...policy };
}

/**
 * A failed connection to an MTA-STS-enforced host, told as such: the reason a recipient waits
 * names the policy (a refused certificate, no STARTTLS), not a bare TLS error.
 */
export function policyError(target: Target, err: unknown): unknown {
  if (target.tlsPolicy?.mode !== 'enforce') return err;
  const e = (err ?? {}) as { code?: string; message?: string };
  const message = `MTA-STS (enforce): ${target.name ?? target.host}: ${e.message ?? String(err)}`;
  return Object.assign(new Error(message), { code: e.code ?? 'ETLS' });
}
