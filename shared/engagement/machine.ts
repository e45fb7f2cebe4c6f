// Machine or person for one open or click (DESIGN §20), from what the request says (method,
// client address, user agent) and what the recipient's record says (delivery time, the other
// links clicked just before). Pure: the web process gathers the signals, this decides.
import { BlockList, isIP } from 'node:net';
import { LINK_BURST_MS, MACHINE_SOURCES, TOO_FAST_MS, type MachineReason } from './machine-sources.js';

export type { MachineReason } from './machine-sources.js';

export interface HitSignals {
  kind: 'open' | 'click';
  /** The HTTP method (a HEAD fetches no pixel and follows no link). */
  method: string;
  /** The client address: the socket's, or X-Forwarded-For's under TRUST_PROXY. */
  ip: string;
  userAgent: string;
  at: Date;
  /** When the recipient's message was delivered (null: not known). */
  deliveredAt: Date | null;
  /** Times of this recipient's clicks on other links of the message, most recent first. */
  otherLinkClicks: Date[];
}

export interface Verdict {
  machine: boolean;
  machine_reason: MachineReason | null;
}

interface CompiledSource {
  reason: 'apple_mpp' | 'scanner';
  ranges: BlockList;
  agents: readonly RegExp[];
}

/** Parses "a.b.c.d/n" or "v6::/n" into a BlockList entry; a malformed row is a programming error. */
export function addCidr(list: BlockList, cidr: string): void {
  const [net, bits] = cidr.split('/');
  const family = isIP(net ?? '');
  if (!family || bits === undefined || !/^\d{1,3}$/.test(bits)) throw new Error(`bad CIDR in machine table: ${cidr}`);
  list.addSubnet(net!, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
}

const COMPILED: CompiledSource[] = MACHINE_SOURCES.map((s) => {
  const ranges = new BlockList();
  for (const cidr of s.ranges) addCidr(ranges, cidr);
  return { reason: s.reason, ranges, agents: s.agents };
});

/** The address as the table knows it: an IPv4-mapped IPv6 address becomes IPv4. */
export function plainAddress(ip: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped ? mapped[1]! : ip;
  const family = isIP(address);
  return family === 0 ? null : { address, family: family === 4 ? 'ipv4' : 'ipv6' };
}

/** The table's reason for this address or agent, or null. */
export function sourceReason(ip: string, userAgent: string): 'apple_mpp' | 'scanner' | null {
  const addr = plainAddress(ip);
  for (const s of COMPILED) {
    if (addr && s.ranges.check(addr.address, addr.family)) return s.reason;
    if (s.agents.some((re) => re.test(userAgent))) return s.reason;
  }
  return null;
}

const person: Verdict = { machine: false, machine_reason: null };
const machine = (reason: MachineReason): Verdict => ({ machine: true, machine_reason: reason });

export function judgeHit(s: HitSignals): Verdict {
  if (s.method === 'HEAD') return machine('head');
  const source = sourceReason(s.ip, s.userAgent.trim());
  if (source) return machine(source);
  if (s.kind === 'open') return person;
  if (s.deliveredAt && s.at.getTime() - s.deliveredAt.getTime() < TOO_FAST_MS) return machine('too_fast');
  if (s.otherLinkClicks.some((t) => s.at.getTime() - t.getTime() < LINK_BURST_MS)) return machine('scanner');
  return person;
}
