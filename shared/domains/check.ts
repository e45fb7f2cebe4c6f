// One DNS check of a domain, stored: shared by POST /domains/{id}/verify and the console's
// Verify button. A name another organization holds verified is never verified here (inbound
// routing needs one owner), including when the other one wins a race to the unique index.
import type { Config } from '../config.js';
import { isVerifiedElsewhere, saveDomainCheck, type DomainRow } from '../db/domains.js';
import type { Db } from '../db/pool.js';
import type { DomainRecord } from './records.js';
import { uniqueViolation } from './setup.js';
import { takenOutcome, verifyRecords } from './verify.js';

const DNS_TIMEOUT_MS = 2000;

/** Returns the stored row (null when the domain disappeared meanwhile). */
export async function checkDomain(
  db: Db,
  config: Pick<Config, 'dnsServers' | 'mxHost'>,
  d: DomainRow,
): Promise<DomainRow | null> {
  const records = d.records as DomainRecord[];
  let outcome = (await isVerifiedElsewhere(db, d.name, d.org_id))
    ? takenOutcome(records, d.name)
    : await verifyRecords(records, { dnsServers: config.dnsServers, mxHost: config.mxHost, timeoutMs: DNS_TIMEOUT_MS });
  try {
    return await saveDomainCheck(db, d.id, outcome);
  } catch (err) {
    if (uniqueViolation(err) !== 'domains_verified_name_key') throw err;
    outcome = takenOutcome(records, d.name);
    return await saveDomainCheck(db, d.id, outcome);
  }
}
