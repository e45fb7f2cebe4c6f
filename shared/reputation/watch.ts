// The reputation watch (DESIGN §20; docs/operations.md "Reputation watch"): each sending address
// (every IP-pool address, and the host's public addresses when mail leaves from this host) is
// looked up in RBL_ZONES and each verified domain in DBL_ZONES, through DNS_SERVERS. A target
// that becomes listed fires `ip.listed` / `domain.listed` to the organizations it concerns (their
// webhooks and admins, as the organization events), and a listed pool address leaves its pool's
// rotation while the pool has another; when no zone lists it any more, `…delisted` and it
// returns. An unknown answer (time-out, refusal, 127.255.255.x) changes no verdict.
import { networkInterfaces } from 'node:os';
import type { Logger } from '../logger.js';
import type { ToolConfig } from '../config.js';
import type { Db, Sql } from '../db/pool.js';
import {
  orgsOfAddress,
  poolAddresses,
  recordAnswers,
  setAddressListed,
  watchedDomains,
  type RblKind,
} from '../db/reputation.js';
import { createResolver } from '../domains/verify.js';
import { normaliseIp } from '../domains/own-addresses.js';
import { rangeList } from '../ip-ranges.js';
import { recordOrgEvent } from '../org-events.js';
import { lookUp, type RblStatus } from './dnsbl.js';

export interface WatchDeps {
  sql: Sql;
  config: Pick<ToolConfig, 'rblZones' | 'dblZones' | 'dnsServers' | 'smtpSmarthost'>;
  logger: Logger;
  /** Wakes the fan-out for the recorded events (its timer drains them anyway). */
  publish?: (eventIds: string[]) => Promise<void>;
}

export interface TargetReport {
  kind: RblKind;
  target: string;
  /** The pool of an address (null: the host's). */
  pool: string | null;
  listed: boolean;
  zones: { zone: string; status: RblStatus; answer: string | null }[];
}

/** Addresses never on a public blocklist: private, loopback, link-local, shared, documentation. */
const NOT_PUBLIC = rangeList([
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.2.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '2001:db8::/32',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
]);

/** The host's public interface addresses: where mail leaves from without a pool (none via a smarthost). */
export function hostAddresses(config: Pick<ToolConfig, 'smtpSmarthost'>): string[] {
  if (config.smtpSmarthost) return [];
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (!i.internal && !NOT_PUBLIC(i.address)) out.add(normaliseIp(i.address));
  }
  return [...out].sort();
}

const LOOKUPS_AT_ONCE = 8;

async function eachLimited<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUPS_AT_ONCE, items.length) }, runner));
}

/** One check of every target; records the answers and fires the events of what changed. */
export async function checkReputation(deps: WatchDeps): Promise<TargetReport[]> {
  const { config } = deps;
  const resolver = createResolver(config.dnsServers, 5000);
  const targets: { kind: RblKind; target: string; pool: string | null; zones: string[] }[] = [];
  if (config.rblZones.length > 0) {
    const pooled = await poolAddresses(deps.sql);
    for (const a of pooled) targets.push({ kind: 'ip', target: a.address, pool: a.pool, zones: config.rblZones });
    const inPools = new Set(pooled.map((a) => a.address));
    for (const a of hostAddresses(config)) {
      if (!inPools.has(a)) targets.push({ kind: 'ip', target: a, pool: null, zones: config.rblZones });
    }
  }
  const domains = config.dblZones.length > 0 ? await watchedDomains(deps.sql) : [];
  for (const name of new Set(domains.map((d) => d.name))) {
    targets.push({ kind: 'domain', target: name, pool: null, zones: config.dblZones });
  }
  const reports: TargetReport[] = [];
  const eventIds: string[] = [];
  await eachLimited(targets, async (t) => {
    const zones = await Promise.all(
      t.zones.map(async (zone) => ({ zone, ...(await lookUp(resolver, t.target, zone)) })),
    );
    const ids = await deps.sql.begin(async (tx) => {
      const change = await recordAnswers(tx, t.kind, t.target, zones);
      reports.push({ kind: t.kind, target: t.target, pool: t.pool, listed: change.after, zones });
      if (change.before === change.after) return [];
      log(deps, t, change.after, change.zones);
      if (t.kind === 'ip') {
        await setAddressListed(tx, t.target, change.after);
        const data = { ip: t.target, pool: t.pool, ...(change.after ? { zones: change.zones } : {}) };
        const type = change.after ? 'ip.listed' : 'ip.delisted';
        return await fire(
          tx,
          (await orgsOfAddress(tx, t.target)).map((orgId) => ({ orgId, type, data })),
        );
      }
      const type = change.after ? 'domain.listed' : 'domain.delisted';
      return await fire(
        tx,
        domains
          .filter((d) => d.name === t.target)
          .map((d) => ({
            orgId: d.org_id,
            type,
            domainId: d.id,
            data: { domain_id: d.id, domain: d.name, ...(change.after ? { zones: change.zones } : {}) },
          })),
      );
    });
    eventIds.push(...ids);
  });
  if (eventIds.length > 0 && deps.publish) await deps.publish(eventIds).catch(() => undefined);
  return reports.sort((a, b) => (a.kind + a.target < b.kind + b.target ? -1 : 1));
}

type NewOrgEvent = Parameters<typeof recordOrgEvent>[1];

async function fire(tx: Db, events: NewOrgEvent[]): Promise<string[]> {
  const ids: string[] = [];
  for (const ev of events) {
    const id = await recordOrgEvent(tx, ev);
    if (id) ids.push(id);
  }
  return ids;
}

function log(deps: WatchDeps, t: { kind: RblKind; target: string }, listed: boolean, zones: { zone: string }[]) {
  if (listed) {
    deps.logger.warn(
      { event: 'RBL_LISTED', kind: t.kind, target: t.target, zones: zones.map((z) => z.zone) },
      `${t.kind === 'ip' ? 'sending address' : 'domain'} is on a blocklist`,
    );
  } else {
    deps.logger.info({ event: 'RBL_DELISTED', kind: t.kind, target: t.target }, 'off the blocklists');
  }
}
