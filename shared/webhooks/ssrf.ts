// The SSRF guard of webhook delivery (DESIGN §7): the address a webhook connection actually
// dials is checked at connect time, after resolution, so that a public name resolving to a
// private, loopback, link-local, CGNAT, multicast or metadata address (or one re-pointed after
// the URL was validated) is refused before any packet is sent to it.
import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { buildConnector } from 'undici';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (injected in tests to point at a local DNS). */
export type LookupFn = (hostname: string) => Promise<ResolvedAddress[]>;

export class SsrfError extends Error {
  readonly code = 'ESSRF';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`refused to connect to ${host} (${address}): not a public address`);
    this.name = 'SsrfError';
  }
}

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback, and IPv4-compatible (::a.b.c.d, deprecated) addresses
  ['fc00::', 7], // unique-local, includes the EC2 metadata address fd00:ec2::254
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96], // NAT64: embeds an IPv4 address that may be private
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215), same reason
  ['::ffff:0:0:0', 96], // IPv4-translated (RFC 2765): never a destination on the wire
  ['2002::', 16], // 6to4 (deprecated by RFC 7526): a relay would dial the embedded IPv4 address
  ['2001:db8::', 32], // documentation
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 literal (a trailing dotted IPv4 part included), or null. */
function groupsV6(address: string): number[] | null {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const b = dotted.slice(1).map(Number);
    if (b.some((n) => n > 255)) return null;
    text = `${text.slice(0, dotted.index)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address stands for, whatever its notation: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d) and 6to4
 * (2002:aabb:ccdd::/48). The ranges are refused as a whole where they cannot be a public
 * destination; the embedded address is checked as well, so that a private one is named.
 */
function embeddedV4(address: string): string | null {
  const g = groupsV6(address);
  if (!g) return null;
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!);
  if (g.slice(0, 4).some((x) => x !== 0)) return null;
  const [, , , , a, b, hi, lo] = g as [number, number, number, number, number, number, number, number];
  if ((a === 0 && (b === 0 || b === 0xffff)) || (a === 0xffff && b === 0)) return v4Of(hi, lo);
  return null;
}

/** True when `address` (an IP literal) is one a webhook must not reach. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedV4(address);
  if (v4 !== null && blocked.check(v4, 'ipv4')) return true;
  return blocked.check(address, 'ipv6');
}

export const systemLookup: LookupFn = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** A lookup that asks the given DNS servers (host:port) directly, A then AAAA. */
export function resolverLookup(servers: string[]): LookupFn {
  const resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers(servers);
  return async (hostname) => {
    const [v4, v6] = await Promise.all([
      resolver.resolve4(hostname).catch(() => [] as string[]),
      resolver.resolve6(hostname).catch(() => [] as string[]),
    ]);
    const all = [
      ...v4.map((address) => ({ address, family: 4 as const })),
      ...v6.map((address) => ({ address, family: 6 as const })),
    ];
    if (all.length === 0) throw Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' });
    return all;
  };
}

/**
 * Resolves `host` and returns the address to dial. Every resolved address must be allowed (a
 * name that also resolves to a private address is refused as a whole), unless `allowPrivate`.
 */
export async function resolveSafe(host: string, lookup: LookupFn, allowPrivate: boolean): Promise<ResolvedAddress> {
  const bare = host.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  const addresses: ResolvedAddress[] = family ? [{ address: bare, family: family === 6 ? 6 : 4 }] : await lookup(bare);
  if (addresses.length === 0) throw Object.assign(new Error(`no address for ${bare}`), { code: 'ENOTFOUND' });
  if (!allowPrivate) {
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad) throw new SsrfError(bare, bad.address);
  }
  return addresses[0]!;
}

/**
 * An undici connector that dials only the checked address: the host is resolved here, checked,
 * and the socket opened to that IP (TLS still verifies the certificate against the host name).
 */
export function guardedConnector(opts: {
  lookup: LookupFn;
  allowPrivate: boolean;
  timeoutMs: number;
}): buildConnector.connector {
  const base = buildConnector({ timeout: opts.timeoutMs });
  return (options, callback) => {
    const host = options.hostname;
    resolveSafe(host, opts.lookup, opts.allowPrivate).then(
      (resolved) => {
        const bare = host.replace(/^\[|\]$/g, '');
        const servername = options.servername ?? (isIP(bare) ? undefined : bare);
        base({ ...options, hostname: resolved.address, ...(servername ? { servername } : {}) }, callback);
      },
      (err: Error) => callback(err, null),
    );
  };
}
