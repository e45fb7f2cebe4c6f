// Sets of CIDR blocks (IPv4 and IPv6) to test addresses against: the machine table of tracking
// (shared/engagement/machine-sources.ts) and the private ranges the reputation watch skips.
import { BlockList, isIP } from 'node:net';

/** The address as one spelling: an IPv4-mapped IPv6 address becomes IPv4; null: not an address. */
export function plainAddress(ip: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped ? mapped[1]! : ip;
  const family = isIP(address);
  return family === 0 ? null : { address, family: family === 4 ? 'ipv4' : 'ipv6' };
}

/** A set of CIDR blocks ("a.b.c.d/n", "v6::/n"); a malformed block is a programming error. */
export function rangeList(cidrs: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split('/');
    const family = isIP(net ?? '');
    if (!family || bits === undefined || !/^\d{1,3}$/.test(bits)) throw new Error(`bad CIDR: ${cidr}`);
    list.addSubnet(net!, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  }
  return (ip) => {
    const a = plainAddress(ip);
    return a !== null && list.check(a.address, a.family);
  };
}
