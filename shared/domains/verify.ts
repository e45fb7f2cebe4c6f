// DNS verification of a domain's records (DESIGN §5). Each record is looked up on its own, with
// a short timeout, through the resolvers of DNS_SERVERS (the system's when unset). A record that
// could not be looked up (timeout, server failure) stays `pending`: the check says nothing about
// it. One that is missing or different is `failed`, with a reason a person can act on.
import { Resolver } from 'node:dns/promises';
import { domainStatusOf, type DomainRecord, type RecordStatus } from './records.js';

export interface VerifyOptions {
  dnsServers: string[];
  mxHost: string;
  /** Per-query timeout in ms (one try per server). */
  timeoutMs?: number;
}

export interface VerifyOutcome {
  status: RecordStatus;
  records: DomainRecord[];
}

type Check = { status: RecordStatus; reason?: string };

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

export function createResolver(dnsServers: string[], timeoutMs: number): Resolver {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  // node accepts "host", "host:port" and "[v6]:port" here.
  if (dnsServers.length > 0) resolver.setServers(dnsServers);
  return resolver;
}

function lookupFailure(err: unknown, name: string, type: string): Check {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NOT_FOUND.has(code)) {
    return { status: 'failed', reason: `No ${type} record found at ${name}` };
  }
  return { status: 'pending', reason: `DNS lookup of ${name} did not answer (${String(code ?? err)}); try again` };
}

async function txt(resolver: Resolver, name: string): Promise<string[]> {
  // A TXT record longer than 255 bytes arrives in several strings: they form one value.
  return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
}

function dkimKeyOf(value: string): string | null {
  for (const tag of value.split(';')) {
    const m = /^\s*p\s*=(.*)$/s.exec(tag);
    if (m) return m[1]!.replace(/\s+/g, '');
  }
  return null;
}

async function checkDkim(resolver: Resolver, rec: DomainRecord): Promise<Check> {
  const values = await txt(resolver, rec.name);
  const want = dkimKeyOf(rec.value);
  const keys = values.filter((v) => /^\s*v\s*=\s*DKIM1/i.test(v) || dkimKeyOf(v) !== null).map(dkimKeyOf);
  if (keys.length === 0) return { status: 'failed', reason: `No DKIM TXT record found at ${rec.name}` };
  if (keys.includes(want)) return { status: 'verified' };
  return {
    status: 'failed',
    reason: `The DKIM record at ${rec.name} has another public key (p=); publish the value given`,
  };
}

async function checkSpf(resolver: Resolver, rec: DomainRecord, mxHost: string): Promise<Check> {
  const spf = (await txt(resolver, rec.name)).filter((v) => /^v=spf1(\s|$)/i.test(v.trim()));
  if (spf.length === 0) return { status: 'failed', reason: `No SPF (v=spf1) TXT record found at ${rec.name}` };
  if (spf.length > 1) {
    return { status: 'failed', reason: `${rec.name} has ${spf.length} SPF records; RFC 7208 allows one` };
  }
  const terms = spf[0]!.trim().toLowerCase().split(/\s+/);
  // The MX host, and every IP pool address the record names (ip4:/ip6:, shared/domains/pool-spf.ts).
  const wanted = [
    `a:${mxHost.toLowerCase()}`,
    ...rec.value
      .toLowerCase()
      .split(/\s+/)
      .filter((t) => /^ip[46]:/.test(t)),
  ];
  const missing = wanted.filter((m) => !terms.includes(m) && !terms.includes(`+${m}`));
  if (missing.length === 0) return { status: 'verified' };
  return { status: 'failed', reason: `The SPF record at ${rec.name} does not authorise ${missing.join(' ')}` };
}

async function checkMx(resolver: Resolver, rec: DomainRecord, mxHost: string): Promise<Check> {
  const hosts = (await resolver.resolveMx(rec.name)).map((m) => m.exchange.toLowerCase().replace(/\.$/, ''));
  if (hosts.length === 0) return { status: 'failed', reason: `No MX record found at ${rec.name}` };
  if (hosts.includes(mxHost.toLowerCase())) return { status: 'verified' };
  return { status: 'failed', reason: `The MX of ${rec.name} points at ${hosts.join(', ')}, not ${mxHost}` };
}

async function checkDmarc(resolver: Resolver, rec: DomainRecord): Promise<Check> {
  const found = (await txt(resolver, rec.name)).some((v) => /^v=DMARC1(\s*;|\s*$)/i.test(v.trim()));
  if (found) return { status: 'verified' };
  return { status: 'failed', reason: `No DMARC record at ${rec.name} (recommended; does not block verification)` };
}

async function checkRecord(resolver: Resolver, rec: DomainRecord, mxHost: string): Promise<Check> {
  try {
    switch (rec.record) {
      case 'DKIM':
        return await checkDkim(resolver, rec);
      case 'SPF':
        return await checkSpf(resolver, rec, mxHost);
      case 'MX_BOUNCE':
      case 'MX_REPLY':
      case 'MX_INBOUND':
        return await checkMx(resolver, rec, mxHost);
      case 'DMARC':
        return await checkDmarc(resolver, rec);
    }
  } catch (err) {
    return lookupFailure(err, rec.name, rec.type);
  }
}

function withCheck(rec: DomainRecord, check: Check): DomainRecord {
  const { reason: _old, ...rest } = rec;
  return check.reason ? { ...rest, status: check.status, reason: check.reason } : { ...rest, status: check.status };
}

/** Looks every record up (in parallel) and derives the domain's status. */
export async function verifyRecords(records: DomainRecord[], opts: VerifyOptions): Promise<VerifyOutcome> {
  const resolver = createResolver(opts.dnsServers, opts.timeoutMs ?? 2000);
  // The MX host the records were issued for is what the zone must name, even if MX_HOST changed.
  const checked = await Promise.all(
    records.map(async (rec) => withCheck(rec, await checkRecord(resolver, rec, mxHostOf(rec, opts.mxHost)))),
  );
  return { status: domainStatusOf(checked), records: checked };
}

function mxHostOf(rec: DomainRecord, fallback: string): string {
  if (rec.type === 'MX') return rec.value;
  const m = /\sa:(\S+)/.exec(rec.record === 'SPF' ? ` ${rec.value}` : '');
  return m ? m[1]! : fallback;
}

/** Marks every required record failed: the name belongs to another organization. */
export function takenOutcome(records: DomainRecord[], name: string): VerifyOutcome {
  const reason = `${name} is already verified by another organization on this install`;
  const marked = records.map((r) => (r.record === 'DMARC' ? r : withCheck(r, { status: 'failed', reason })));
  return { status: 'failed', records: marked };
}
