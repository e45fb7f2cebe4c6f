// A scheduled DNS re-check of one domain (workers/domain-recheck.ts claims and runs them; docs:
// docs/api/domains.md "Re-checks"). The manual Verify stores what it sees at once; a re-check is
// careful about false alarms, since a failed domain stops sending:
// - a lookup that does not answer (timeout, server failure: the records stay `pending`) says
//   nothing: the domain, its records and its verified_at (the warm-up ramp) stay as they are;
// - a verified domain whose records definitely fail (missing or different) is only marked failed,
//   and `domain.failed` fired, when the next re-check RECHECK_CONFIRM_SECONDS later fails too
//   (a DNS change in flight, one bad resolver); a pass in between clears the first failure;
// - a failed domain that passes becomes verified, and `domain.verified` fires, at once.
// A verified domain is checked against the records it was verified with: after an IP pool change
// its SPF record is shown `pending` until its owner publishes the new value and verifies, and a
// re-check does not fail the domain for it. A failed domain is checked as Verify checks it.
// The event is recorded in the transaction that stores the verdict, so a crash cannot lose it.
import type { Config } from '../config.js';
import { deferRecheck, saveRecheck } from '../db/domain-recheck.js';
import type { DomainRow, DomainStatus } from '../db/domains.js';
import type { Sql } from '../db/pool.js';
import { publishEvents } from '../events.js';
import { recordOrgEvent } from '../org-events.js';
import type { Queues } from '../queues.js';
import { lookUpRecords, verdictEvent } from './check.js';
import { withPoolSpfOne } from './pool-spf.js';
import type { DomainRecord, RecordStatus } from './records.js';
import { uniqueViolation } from './setup.js';
import { takenOutcome, type VerifyOutcome } from './verify.js';

/** The confirming re-check of a verified domain's first definite failure comes this much later. */
export const RECHECK_CONFIRM_SECONDS = 15 * 60;
/** A claimed domain is due again after this long if its worker never wrote the result. */
export const RECHECK_LEASE_SECONDS = 5 * 60;

/**
 * - `store`: conclusive; the outcome is stored (the domain stays or becomes verified or failed);
 * - `suspect`: a verified domain's first definite failure; nothing stored, checked again soon;
 * - `inconclusive`: a lookup did not answer; nothing stored.
 */
export type RecheckVerdict = 'store' | 'suspect' | 'inconclusive';

export function recheckVerdict(
  d: Pick<DomainRow, 'status' | 'recheck_failures'>,
  outcome: RecordStatus,
): RecheckVerdict {
  if (outcome === 'pending') return 'inconclusive';
  if (outcome === 'failed' && d.status === 'verified' && d.recheck_failures < 1) return 'suspect';
  return 'store';
}

export interface RecheckResult {
  verdict: RecheckVerdict;
  /** The domain's status after the re-check. */
  status: DomainStatus;
  /** The records as looked up (failing ones carry a `reason`). */
  records: DomainRecord[];
  /** The organization event recorded (domain.failed or domain.verified), if any. */
  eventId: string | null;
  /** False when a manual Verify or another worker took the domain meanwhile: nothing was written. */
  written: boolean;
}

export interface RecheckDeps {
  sql: Sql;
  queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>;
  config: Pick<Config, 'dnsServers' | 'mxHost' | 'domainRecheckHours'>;
}

/** Re-checks one claimed domain (`d.next_check_at` holds the claim). */
export async function recheckDomain(deps: RecheckDeps, d: DomainRow): Promise<RecheckResult> {
  const intervalSeconds = deps.config.domainRecheckHours * 3600;
  const records =
    d.status === 'verified'
      ? (d.records as DomainRecord[])
      : ((await withPoolSpfOne(deps.sql, d)).records as DomainRecord[]);
  const outcome = await lookUpRecords(deps.sql, deps.config, d, records);
  const verdict = recheckVerdict(d, outcome.status);
  if (verdict !== 'store') {
    // Inconclusive keeps an unconfirmed failure (the confirming check comes again soon).
    const failures = verdict === 'suspect' ? 1 : d.recheck_failures;
    const next = failures > 0 ? RECHECK_CONFIRM_SECONDS : intervalSeconds;
    const written = await deferRecheck(deps.sql, d, failures, next);
    return { verdict, status: d.status, records: outcome.records, eventId: null, written };
  }
  let stored: Stored | null;
  try {
    stored = await store(deps.sql, d, outcome, intervalSeconds);
  } catch (err) {
    // Another organization verified the name between the look-up and the write.
    if (uniqueViolation(err) !== 'domains_verified_name_key') throw err;
    stored = await store(deps.sql, d, takenOutcome(records, d.name), intervalSeconds);
  }
  if (!stored) return { verdict, status: d.status, records: outcome.records, eventId: null, written: false };
  // Publishing only wakes the fan-out sooner; its timer drains an event whose wake-up failed.
  if (stored.eventId) await publishEvents(deps.sql, deps.queues, [stored.eventId]).catch(() => undefined);
  const row = stored.row;
  return {
    verdict,
    status: row.status,
    records: row.records as DomainRecord[],
    eventId: stored.eventId,
    written: true,
  };
}

interface Stored {
  row: DomainRow;
  eventId: string | null;
}

async function store(sql: Sql, d: DomainRow, outcome: VerifyOutcome, nextInSeconds: number): Promise<Stored | null> {
  return await sql.begin(async (tx) => {
    const row = await saveRecheck(tx, d, outcome, nextInSeconds);
    if (!row) return null;
    const ev = verdictEvent(d, row);
    return { row, eventId: ev ? await recordOrgEvent(tx, ev) : null };
  });
}
