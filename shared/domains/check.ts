// One DNS check of a domain, stored: shared by POST /domains/{id}/verify and the console's
// Verify button. A name another organization holds verified is never verified here (inbound
// routing needs one owner), including when the other one wins a race to the unique index.
// A check that changes the verdict fires an organization event: `domain.verified` when the
// domain becomes verified, `domain.failed` when a verified domain stops passing. The demo domain
// of `npm start` is never checked.
import type { Config } from '../config.js';
import { isVerifiedElsewhere, saveDomainCheck, type DomainRow } from '../db/domains.js';
import type { Db } from '../db/pool.js';
import { fireOrgEvent, type OrgEvent } from '../org-events.js';
import type { Queues } from '../queues.js';
import { withPoolSpfOne } from './pool-spf.js';
import type { DomainRecord } from './records.js';
import { uniqueViolation } from './setup.js';
import { takenOutcome, verifyRecords, type VerifyOutcome } from './verify.js';

const DNS_TIMEOUT_MS = 2000;

/** Returns the stored row (null when the domain disappeared meanwhile). */
export async function checkDomain(
  db: Db,
  config: Pick<Config, 'dnsServers' | 'mxHost'>,
  d: DomainRow,
  queues?: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>,
): Promise<DomainRow | null> {
  // The demo domain is verified by definition and never looked up: its records are published
  // nowhere, so a check would only fail it and stop the demo's test sends.
  if (d.demo) return d;
  const saved = await checkAndSave(db, config, d);
  if (saved && queues) await fireVerdictChange(db, queues, d, saved);
  return saved;
}

async function fireVerdictChange(
  db: Db,
  queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>,
  before: DomainRow,
  after: DomainRow,
): Promise<void> {
  const ev = verdictEvent(before, after);
  if (ev) await fireOrgEvent({ sql: db, queues }, ev);
}

/**
 * The organization event a check that changed the verdict fires: `domain.verified` when the
 * domain became verified, `domain.failed` (with the failing records) when a verified one failed.
 */
export function verdictEvent(before: Pick<DomainRow, 'status'>, after: DomainRow): OrgEvent | null {
  const base = { domain_id: after.id, domain: after.name };
  if (after.status === 'verified' && before.status !== 'verified') {
    return { orgId: after.org_id, type: 'domain.verified', data: base, domainId: after.id };
  }
  if (before.status === 'verified' && after.status === 'failed') {
    const failing = (after.records as DomainRecord[])
      .filter((r) => r.status === 'failed')
      .map((r) => ({ record: r.record, name: r.name, reason: r.reason ?? null }));
    return { orgId: after.org_id, type: 'domain.failed', data: { ...base, records: failing }, domainId: after.id };
  }
  return null;
}

/** Looks `records` up; a name another organization holds verified fails whatever DNS says. */
export async function lookUpRecords(
  db: Db,
  config: Pick<Config, 'dnsServers' | 'mxHost'>,
  d: Pick<DomainRow, 'name' | 'org_id'>,
  records: DomainRecord[],
): Promise<VerifyOutcome> {
  if (await isVerifiedElsewhere(db, d.name, d.org_id)) return takenOutcome(records, d.name);
  return await verifyRecords(records, {
    dnsServers: config.dnsServers,
    mxHost: config.mxHost,
    timeoutMs: DNS_TIMEOUT_MS,
  });
}

async function checkAndSave(
  db: Db,
  config: Pick<Config, 'dnsServers' | 'mxHost'>,
  d: DomainRow,
): Promise<DomainRow | null> {
  // The SPF record expected is the one shown: with the addresses of the pools that apply now.
  const records = (await withPoolSpfOne(db, d)).records as DomainRecord[];
  let outcome = await lookUpRecords(db, config, d, records);
  try {
    return await saveDomainCheck(db, d.id, outcome);
  } catch (err) {
    if (uniqueViolation(err) !== 'domains_verified_name_key') throw err;
    outcome = takenOutcome(records, d.name);
    return await saveDomainCheck(db, d.id, outcome);
  }
}
