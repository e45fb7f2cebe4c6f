// The scheduled DNS re-check of domains (shared/domains/recheck.ts says what one re-check decides;
// docs/api/domains.md "Re-checks"). It runs with the webhook-fanout consumer, whose organization
// events it produces: every minute each worker process schedules the domains not yet on the
// schedule (at a random point of DOMAIN_RECHECK_HOURS), then claims the due ones page after page
// (shared/db/domain-recheck.ts: SKIP LOCKED and a lease, so several worker processes check each
// domain once) and checks a few at a time. DOMAIN_RECHECK_HOURS=0 turns it off.
import { claimDueDomains, scheduleDomainRechecks } from '../shared/db/domain-recheck.js';
import type { DomainRow } from '../shared/db/domains.js';
import { RECHECK_LEASE_SECONDS, recheckDomain, type RecheckResult } from '../shared/domains/recheck.js';
import type { WorkerDeps } from './deps.js';
import { runEvery } from './periodic.js';

export interface DomainRecheckOptions {
  /** How often this process looks for due domains (default 60 s). */
  everyMs?: number;
  /** Domains claimed at once (default 20). */
  pageSize?: number;
  /** Domains checked at once (default 4). */
  concurrency?: number;
  /** A sweep claims no further page after this long (default 45 s). */
  budgetMs?: number;
}

export interface RecheckCounts {
  checked: number;
  /** Domains marked failed (domain.failed fired). */
  failed: number;
  /** Domains verified again (domain.verified fired). */
  verified: number;
  /** Verified domains whose first definite failure awaits its confirming re-check. */
  suspect: number;
  inconclusive: number;
  errors: number;
}

/** One sweep: schedules, then claims and re-checks due domains until none is left or the budget is spent. */
export async function recheckDueDomains(deps: WorkerDeps, opts: DomainRecheckOptions = {}): Promise<RecheckCounts> {
  const counts: RecheckCounts = { checked: 0, failed: 0, verified: 0, suspect: 0, inconclusive: 0, errors: 0 };
  const intervalSeconds = deps.config.domainRecheckHours * 3600;
  if (intervalSeconds <= 0) return counts;
  const pageSize = opts.pageSize ?? 20;
  const deadline = Date.now() + (opts.budgetMs ?? 45_000);
  // A large install's first sweep after an upgrade schedules every domain, 1000 per statement.
  while ((await scheduleDomainRechecks(deps.sql, intervalSeconds, 1000)) === 1000 && Date.now() < deadline);
  for (;;) {
    const page = await claimDueDomains(deps.sql, pageSize, RECHECK_LEASE_SECONDS);
    await eachLimited(page, opts.concurrency ?? 4, async (d) => {
      try {
        tally(counts, report(deps, d, await recheckDomain(deps, d)));
      } catch (err) {
        // The claim stays: the domain is due again when its lease ends.
        counts.errors++;
        deps.logger.warn(
          { event: 'DOMAIN_RECHECK_ERROR', domainId: d.id, err },
          'domain re-check failed; retried later',
        );
      }
    });
    if (page.length < pageSize || Date.now() >= deadline) return counts;
  }
}

function tally(counts: RecheckCounts, r: RecheckResult | null): void {
  if (!r) return;
  counts.checked++;
  if (r.verdict === 'suspect') counts.suspect++;
  else if (r.verdict === 'inconclusive') counts.inconclusive++;
  else if (r.eventId && r.status === 'failed') counts.failed++;
  else if (r.eventId && r.status === 'verified') counts.verified++;
}

/** Logs what the re-check decided; null when its result was dropped (the claim was lost). */
function report(deps: WorkerDeps, d: DomainRow, r: RecheckResult): RecheckResult | null {
  if (!r.written) return null;
  const failing = r.records.filter((x) => x.status === 'failed').map((x) => ({ record: x.record, reason: x.reason }));
  const fields = { domainId: d.id, orgId: d.org_id, domain: d.name };
  if (r.verdict === 'suspect') {
    deps.logger.warn(
      { event: 'DOMAIN_RECHECK_FAILING', ...fields, records: failing },
      'domain failed its DNS re-check; confirming before marking it failed',
    );
  } else if (r.eventId && r.status === 'failed') {
    deps.logger.warn(
      { event: 'DOMAIN_RECHECK_FAILED', ...fields, records: failing },
      'domain failed two DNS re-checks',
    );
  } else if (r.eventId && r.status === 'verified') {
    deps.logger.info(
      { event: 'DOMAIN_RECHECK_VERIFIED', ...fields },
      'failed domain passes its DNS re-check: verified',
    );
  } else if (r.verdict === 'inconclusive') {
    deps.logger.info(
      { event: 'DOMAIN_RECHECK_INCONCLUSIVE', ...fields },
      'DNS lookups did not answer; nothing changed',
    );
  }
  return r;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
}

/** Starts the sweep every `everyMs` (nothing when DOMAIN_RECHECK_HOURS is 0); returns its stop. */
export function startDomainRechecks(deps: WorkerDeps, opts: DomainRecheckOptions = {}): () => void {
  if (deps.config.domainRecheckHours <= 0) return () => undefined;
  return runEvery(
    opts.everyMs ?? 60_000,
    () => recheckDueDomains(deps, opts),
    (err) => deps.logger.warn({ event: 'DOMAIN_RECHECK_SWEEP_FAILED', err }, 'domain re-check sweep failed'),
  );
}
