// The schedule of the domains' DNS re-checks (shared/domains/recheck.ts, workers/domain-recheck.ts).
// A domain is re-checked when a DNS check made it verified or failed (last_checked_at set), and
// it is not the demo domain: a pending domain waits for its owner's Verify, and one marked
// verified without a check (`tern domain add --verified`) has records nobody published.
// `next_check_at` is both the due time and the claim: a worker moves it a lease into the future
// (truncated to the millisecond, so that the value read back matches exactly) and writes the
// result only where it still holds that value. A manual Verify, or another worker after the lease
// ran out, changes it, and the late result is dropped.
import type { DomainRow, DomainStatus } from './domains.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

const eligible = (db: Db) => db`status in ('verified', 'failed') and not demo and last_checked_at is not null`;

/**
 * Puts up to `limit` eligible domains with no re-check scheduled at a random point of the next
 * `intervalSeconds` (a fresh install, or domains just checked by hand, are spread over the
 * interval rather than all due at once). Returns how many.
 */
export async function scheduleDomainRechecks(db: Db, intervalSeconds: number, limit: number): Promise<number> {
  const rows = await db`
    update domains set next_check_at = now() + random() * ${intervalSeconds} * interval '1 second'
    where id in (
      select id from domains where next_check_at is null and ${eligible(db)}
      limit ${limit} for update skip locked)
    returning id`;
  return rows.length;
}

/**
 * Claims up to `limit` due domains, oldest due first, skipping those another worker holds: each
 * one's `next_check_at` moves `leaseSeconds` ahead (the claim; a worker that dies leaves the
 * domain due again when the lease ends). Returns the rows with their claim in `next_check_at`.
 */
export async function claimDueDomains(db: Db, limit: number, leaseSeconds: number): Promise<DomainRow[]> {
  return await db<DomainRow[]>`
    update domains d set next_check_at = date_trunc('milliseconds', now()) + ${leaseSeconds} * interval '1 second'
    from (
      select id from domains where next_check_at <= now() and ${eligible(db)}
      order by next_check_at limit ${limit} for update skip locked) due
    where d.id = due.id
    returning d.*`;
}

/**
 * Stores a conclusive re-check (as saveDomainCheck does: verified_at kept while verified, cleared
 * otherwise) and schedules the next one `nextInSeconds` from now. Null when the claim was lost.
 * Throws the unique violation of domains_verified_name_key when another org owns the name.
 */
export async function saveRecheck(
  db: Db,
  claimed: Pick<DomainRow, 'id' | 'next_check_at'>,
  check: { status: DomainStatus; records: unknown[] },
  nextInSeconds: number,
): Promise<DomainRow | null> {
  const [row] = await db<DomainRow[]>`
    update domains set status = ${check.status}, records = ${jsonParam(db, check.records)},
      last_checked_at = now(), recheck_failures = 0,
      next_check_at = date_trunc('milliseconds', now()) + ${nextInSeconds} * interval '1 second',
      verified_at = case when ${check.status} = 'verified' then coalesce(verified_at, now()) else null end
    where id = ${claimed.id} and next_check_at = ${claimed.next_check_at}
    returning *`;
  return row ?? null;
}

/**
 * Leaves the domain as it is (status, records, verified_at, last_checked_at) and only schedules
 * its next re-check, with `failures` unconfirmed failures. False when the claim was lost.
 */
export async function deferRecheck(
  db: Db,
  claimed: Pick<DomainRow, 'id' | 'next_check_at'>,
  failures: number,
  nextInSeconds: number,
): Promise<boolean> {
  const rows = await db`
    update domains set recheck_failures = ${failures},
      next_check_at = date_trunc('milliseconds', now()) + ${nextInSeconds} * interval '1 second'
    where id = ${claimed.id} and next_check_at = ${claimed.next_check_at}
    returning id`;
  return rows.length > 0;
}
