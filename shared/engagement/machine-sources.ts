// The one table of who fetches tracking links on a person's behalf without the person (DESIGN
// §20): Apple's Mail Privacy Protection proxy and the link scanners of mail gateways, each by the
// addresses it fetches from and the user agents it announces. docs/tracking.md lists every row;
// test/unit/machine-judge.test.ts checks each row's ranges and agents and that the page names it.
// A hit matching a row is a machine's, with the row's reason. Ranges are CIDR blocks (IPv4 or
// IPv6); agents are matched against the whole User-Agent header.

export type MachineReason = 'apple_mpp' | 'head' | 'scanner' | 'too_fast';

export interface MachineSource {
  /** The name docs/tracking.md shows. */
  name: string;
  reason: 'apple_mpp' | 'scanner';
  /** CIDR blocks the source fetches from. */
  ranges: readonly string[];
  /** User agents the source announces. */
  agents: readonly RegExp[];
}

export const MACHINE_SOURCES: readonly MachineSource[] = [
  {
    // Apple fetches every image of a message on arrival from its own network, with a user agent
    // of exactly "Mozilla/5.0" (a mail client's own fetches name the client).
    name: 'Apple Mail Privacy Protection',
    reason: 'apple_mpp',
    ranges: ['17.0.0.0/8'],
    agents: [/^Mozilla\/5\.0$/],
  },
  {
    // Safe Links and attachment detonation run from Exchange Online Protection's published ranges.
    name: 'Microsoft Defender for Office 365 (Safe Links)',
    reason: 'scanner',
    ranges: ['40.92.0.0/15', '40.107.0.0/16', '52.100.0.0/14', '104.47.0.0/17'],
    agents: [/BingPreview/i, /SafeLinks/i],
  },
  {
    name: 'Mimecast URL Protect',
    reason: 'scanner',
    ranges: [
      '205.139.110.0/24',
      '207.211.30.0/24',
      '216.205.24.0/24',
      '195.130.217.0/24',
      '91.220.42.0/24',
      '146.101.78.0/24',
    ],
    agents: [/Mimecast/i],
  },
  {
    name: 'Proofpoint URL Defense',
    reason: 'scanner',
    ranges: ['148.163.128.0/19', '67.231.144.0/20'],
    agents: [/Proofpoint/i, /urldefense/i],
  },
  {
    name: 'Barracuda Email Security',
    reason: 'scanner',
    ranges: ['64.235.144.0/20', '209.222.80.0/21'],
    agents: [/Barracuda/i],
  },
  {
    // Headless browsers and HTTP libraries: no person clicks with them.
    name: 'Headless browsers and HTTP libraries',
    reason: 'scanner',
    ranges: [],
    agents: [/HeadlessChrome/, /PhantomJS/, /python-requests/i, /Go-http-client/, /^Wget\//, /^curl\//],
  },
];

/** A click this soon after the recipient's delivery is a gateway's (`too_fast`). */
export const TOO_FAST_MS = 2000;
/** Two different links of one recipient's message clicked this close together are a scanner's. */
export const LINK_BURST_MS = 1000;
