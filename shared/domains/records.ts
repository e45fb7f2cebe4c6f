// The DNS records a sending domain publishes (DESIGN §5), in the shape the API returns and the
// `domains.records` column stores. Names are absolute (no trailing dot) so that an operator can
// paste them into any DNS provider without guessing the zone.

export const DKIM_SELECTOR = 'tern';
export const MX_PRIORITY = 10;

export type RecordKind = 'DKIM' | 'SPF' | 'MX_BOUNCE' | 'MX_REPLY' | 'MX_INBOUND' | 'DMARC';
export type RecordStatus = 'pending' | 'verified' | 'failed';

export interface DomainRecord {
  record: RecordKind;
  name: string;
  type: 'TXT' | 'MX';
  value: string;
  /** Resend's records carry a TTL; Tern does not care which one the zone uses. */
  ttl: 'Auto';
  priority?: number;
  status: RecordStatus;
  /** Why the last check did not verify this record (absent when verified or never checked). */
  reason?: string;
}

/**
 * Records whose match is needed for the domain to be verified; DMARC is only a suggestion, and
 * MX_INBOUND (the domain's own MX, shown while inbound is enabled) says whether mail reaches the
 * MX without blocking sending.
 */
export const REQUIRED_RECORDS: readonly RecordKind[] = ['DKIM', 'SPF', 'MX_BOUNCE', 'MX_REPLY'];

export function bounceHost(domain: string): string {
  return `bounces.${domain}`;
}

export function replyHost(domain: string): string {
  return `reply.${domain}`;
}

export function dkimHost(domain: string, selector = DKIM_SELECTOR): string {
  return `${selector}._domainkey.${domain}`;
}

export function dkimValue(publicKeyBase64: string): string {
  return `v=DKIM1; k=rsa; p=${publicKeyBase64}`;
}

/**
 * SPF covers the return-path domain `bounces.<domain>` (the envelope sender that receivers check
 * SPF against), not the organization's own apex, so publishing it never disturbs an existing SPF
 * record. `a:<MX_HOST>` authorises the addresses of this install's MX host name: the outbound
 * workers are expected to send from the host the MX name points at (docs/api/domains.md says so). `~all`
 * (softfail) keeps a misconfigured install from turning into hard rejections.
 */
export function spfValue(mxHost: string, poolAddresses: string[] = []): string {
  const ips = poolAddresses.map((a) => (a.includes(':') ? `ip6:${a}` : `ip4:${a}`));
  return ['v=spf1', `a:${mxHost.toLowerCase()}`, ...ips, '~all'].join(' ');
}

/**
 * The SPF value with `ip4:`/`ip6:` terms for the pool addresses the domain's mail may leave from
 * (shared/db/ip-pools.ts poolAddressesOfDomains), in place of those it had.
 */
export function spfWithAddresses(value: string, poolAddresses: string[]): string {
  const host = /\sa:(\S+)/.exec(` ${value}`)?.[1];
  return host ? spfValue(host, poolAddresses) : value;
}

/** Where aggregate reports go: the bounce subdomain, whose MX already points at this install. */
export function dmarcReportAddress(domain: string): string {
  return `dmarc@${bounceHost(domain)}`;
}

/**
 * A starting point that only asks for aggregate reports (GET /domains/{id}/dmarc summarises them);
 * the owner tightens `p` once the reports show every source aligned. The report address is in
 * the domain's own organizational domain, so receivers need no external-destination record
 * (RFC 7489 §7.1).
 */
export function dmarcValue(domain: string): string {
  return `v=DMARC1; p=none; rua=mailto:${dmarcReportAddress(domain)};`;
}

/** The MX of the domain itself, for inbound routes: the same host as the other MX records. */
export function inboundMxRecord(domain: string, mxHost: string): DomainRecord {
  return {
    record: 'MX_INBOUND',
    name: domain,
    type: 'MX',
    value: mxHost.toLowerCase(),
    ttl: 'Auto',
    priority: MX_PRIORITY,
    status: 'pending',
  };
}

/** The records with MX_INBOUND present exactly when inbound is enabled (kept as checked when it stays). */
export function withInboundRecord(records: DomainRecord[], domain: string, mxHost: string, enabled: boolean) {
  const others = records.filter((r) => r.record !== 'MX_INBOUND');
  if (!enabled) return others;
  const kept = records.find((r) => r.record === 'MX_INBOUND');
  const at = others.findIndex((r) => r.record === 'DMARC');
  const mx = kept ?? inboundMxRecord(domain, mxHost);
  return at < 0 ? [...others, mx] : [...others.slice(0, at), mx, ...others.slice(at)];
}

export function buildRecords(domain: string, mxHost: string, publicKeyBase64: string): DomainRecord[] {
  const mx = mxHost.toLowerCase();
  return [
    {
      record: 'DKIM',
      name: dkimHost(domain),
      type: 'TXT',
      value: dkimValue(publicKeyBase64),
      ttl: 'Auto',
      status: 'pending',
    },
    { record: 'SPF', name: bounceHost(domain), type: 'TXT', value: spfValue(mx), ttl: 'Auto', status: 'pending' },
    {
      record: 'MX_BOUNCE',
      name: bounceHost(domain),
      type: 'MX',
      value: mx,
      ttl: 'Auto',
      priority: MX_PRIORITY,
      status: 'pending',
    },
    {
      record: 'MX_REPLY',
      name: replyHost(domain),
      type: 'MX',
      value: mx,
      ttl: 'Auto',
      priority: MX_PRIORITY,
      status: 'pending',
    },
    {
      record: 'DMARC',
      name: `_dmarc.${domain}`,
      type: 'TXT',
      value: dmarcValue(domain),
      ttl: 'Auto',
      status: 'pending',
    },
  ];
}

/** The domain's status from its records: every required one verified, or the first failure wins. */
export function domainStatusOf(records: DomainRecord[]): RecordStatus {
  const required = records.filter((r) => REQUIRED_RECORDS.includes(r.record));
  if (required.every((r) => r.status === 'verified')) return 'verified';
  if (required.some((r) => r.status === 'failed')) return 'failed';
  return 'pending';
}
