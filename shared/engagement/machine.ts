// Machine or person for one open or click (DESIGN §20), from what the request says (method,
// client address, user agent) and what the recipient's record says (delivery time, the other
// links clicked just before). Pure: the web process gathers the signals, this decides.
import { rangeList } from '../ip-ranges.js';
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

const COMPILED = MACHINE_SOURCES.map((s) => ({ reason: s.reason, inRanges: rangeList(s.ranges), agents: s.agents }));

/** The table's reason for this address or agent, or null. */
export function sourceReason(ip: string, userAgent: string): 'apple_mpp' | 'scanner' | null {
  for (const s of COMPILED) {
    if (s.inRanges(ip)) return s.reason;
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
