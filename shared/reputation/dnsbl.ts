// One DNS blocklist look-up (DESIGN §20): the name a zone is asked (an IPv4 address reversed,
// an IPv6 address as reversed nibbles, a domain as it is) and what its answer means. A zone
// answers a listing with an A record in 127.0.0.0/8; "not listed" is NXDOMAIN (or no A record).
// 127.255.255.x answers are the zone's own errors (Spamhaus: a public resolver refused, a query
// quota exceeded), and time-outs, SERVFAIL or answers outside 127/8 say nothing either: each of
// those is "unknown", never "listed".
import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';

export type RblStatus = 'listed' | 'clear' | 'unknown';

export interface RblAnswer {
  status: RblStatus;
  /** The A records of a listing or an unknown answer, or the resolver's error code. */
  answer: string | null;
}

const NOT_LISTED = new Set(['ENOTFOUND', 'ENODATA']);

/** The name looked up in `zone` for an IP address or a domain. */
export function queryName(target: string, zone: string): string {
  const family = isIP(target);
  if (family === 4) return `${target.split('.').reverse().join('.')}.${zone}`;
  if (family === 6) return `${expandV6(target).split('').reverse().join('.')}.${zone}`;
  return `${target.replace(/\.$/, '').toLowerCase()}.${zone}`;
}

/** The 32 hex digits of an IPv6 address. */
function expandV6(address: string): string {
  const [head, tail] = address.toLowerCase().split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = Array.from({ length: 8 - left.length - right.length }, () => '0');
  const groups = tail === undefined ? left : [...left, ...fill, ...right];
  return groups.map((g) => g.padStart(4, '0')).join('');
}

/** What the A records of an answer mean. */
export function judgeAnswer(addresses: string[]): RblStatus {
  if (addresses.length === 0) return 'clear';
  if (addresses.every((a) => a.startsWith('127.255.255.'))) return 'unknown';
  return addresses.some((a) => a.startsWith('127.') && !a.startsWith('127.255.255.')) ? 'listed' : 'unknown';
}

export async function lookUp(resolver: Resolver, target: string, zone: string): Promise<RblAnswer> {
  try {
    const addresses = await resolver.resolve4(queryName(target, zone));
    return { status: judgeAnswer(addresses), answer: addresses.join(',') || null };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const why = typeof code === 'string' ? code : (err as Error).message;
    return NOT_LISTED.has(why) ? { status: 'clear', answer: null } : { status: 'unknown', answer: why };
  }
}
