// Every sending domain's DNS (DESIGN §5 records, checked by shared/domains/verify.ts as
// POST /domains/{id}/verify does): SPF of the return path, DKIM (the published key is the one
// stored), DMARC, MX of reply.<domain> and bounces.<domain>; and, when opens or clicks are
// tracked, the host of the tracking links (BASE_URL) resolves.
import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ToolConfig } from '../../../shared/config.js';
import { listDomainsForDoctor, type DoctorDomainRow } from '../../../shared/db/domains.js';
import type { Sql } from '../../../shared/db/pool.js';
import { withPoolSpf } from '../../../shared/domains/pool-spf.js';
import { dkimValue, type DomainRecord } from '../../../shared/domains/records.js';
import { verifyRecords } from '../../../shared/domains/verify.js';
import { fail, ok, warn, type Check } from './check.js';

const LABEL: Record<DomainRecord['record'], (r: DomainRecord) => string> = {
  SPF: () => 'SPF',
  DKIM: () => 'DKIM',
  DMARC: () => 'DMARC',
  MX_REPLY: (r) => `MX ${r.name}`,
  MX_BOUNCE: (r) => `MX ${r.name}`,
  MX_INBOUND: (r) => `MX ${r.name}`,
};

function publish(r: DomainRecord): string {
  const value = r.type === 'TXT' ? `"${r.value}"` : `${r.priority ?? 10} ${r.value}`;
  return `publish ${r.type} ${r.name} ${value}, then run tern doctor again`;
}

function recordCheck(domain: string, r: DomainRecord): Check {
  const name = `domain ${domain}: ${LABEL[r.record](r)}`;
  if (r.status === 'verified') return ok(name, `${r.type} ${r.name} matches`);
  const reason = r.reason ?? `${r.type} ${r.name} does not match`;
  if (r.status === 'pending') return warn(name, reason, 'check that DNS_SERVERS answer, then run tern doctor again');
  // Neither blocks sending: DMARC is a suggestion, MX_INBOUND only concerns receiving.
  return r.record === 'DMARC' || r.record === 'MX_INBOUND'
    ? warn(name, reason, publish(r))
    : fail(name, reason, publish(r));
}

async function trackingCheck(d: DoctorDomainRow, config: ToolConfig, resolver: Resolver): Promise<Check> {
  const name = `domain ${d.name}: tracking`;
  if (!d.tracking) return ok(name, 'opens and clicks not tracked: links are left as written');
  const host = new URL(config.baseUrl).hostname.replace(/^\[|\]$/g, '');
  const fix = `publish A/AAAA (or CNAME) ${host} pointing at the web process, or set BASE_URL to a host that does`;
  if (isIP(host)) return ok(name, `tracking links go to ${config.baseUrl}`);
  const found = await Promise.allSettled([
    resolver.resolve4(host),
    resolver.resolve6(host),
    resolver.resolveCname(host),
  ]);
  if (found.some((r) => r.status === 'fulfilled' && r.value.length > 0)) {
    return ok(name, `tracking links go to ${config.baseUrl} (${host} resolves)`);
  }
  return fail(name, `tracking links go to ${host}, which does not resolve`, fix);
}

async function checkDomain(d: DoctorDomainRow, config: ToolConfig, resolver: Resolver): Promise<Check[]> {
  if (d.demo) return [ok(`domain ${d.name}`, 'the demo domain: never leaves this machine, needs no DNS')];
  if (!d.dkim_public_key) {
    return [
      fail(`domain ${d.name}: DKIM`, 'no DKIM key stored', 'remove the domain and add it again (a new key is made)'),
    ];
  }
  // The DKIM value is rebuilt from the stored key: what DNS publishes must be that key.
  const records = (d.records as DomainRecord[]).map((r) =>
    r.record === 'DKIM' ? { ...r, value: dkimValue(d.dkim_public_key!) } : r,
  );
  const outcome = await verifyRecords(records, {
    dnsServers: config.dnsServers,
    mxHost: config.mxHost,
    timeoutMs: 3000,
  });
  return [...outcome.records.map((r) => recordCheck(d.name, r)), await trackingCheck(d, config, resolver)];
}

export async function domainChecks(
  sql: Sql,
  config: ToolConfig,
  resolver: Resolver,
  only: string | null,
): Promise<Check[]> {
  // The SPF record expected names the addresses of the IP pools that can carry each domain's mail.
  const domains = await withPoolSpf(sql, await listDomainsForDoctor(sql, only));
  if (only !== null && domains.length === 0) {
    return [
      fail(`domain ${only}`, 'no such domain on this install', 'add it (POST /api/v1/domains or tern domain add)'),
    ];
  }
  if (domains.length === 0) {
    return [
      warn('domains', 'no sending domain yet', 'add one (POST /api/v1/domains, the console, or tern domain add)'),
    ];
  }
  const real = domains.filter((d) => !d.demo);
  const shown = only !== null || real.length === 0 ? domains : real; // the demo domain only when asked or alone
  return (await Promise.all(shown.map((d) => checkDomain(d, config, resolver)))).flat();
}
