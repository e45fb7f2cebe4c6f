// Suppressions: addresses that must not receive live mail, org-wide (domain_id null) or for one
// sending domain. The API manages them; the delivery engine checks and adds them.
import { isId, newId } from '../ids.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';

export interface SuppressionRow {
  id: string;
  org_id: string;
  email: string;
  domain_id: string | null;
  reason: SuppressionReason;
  source_email_id: string | null;
  created_at: Date;
}

export interface NewSuppression {
  orgId: string;
  email: string;
  /** null = organization-wide. */
  domainId: string | null;
  reason: SuppressionReason;
  sourceEmailId: string | null;
}

/**
 * Which rows a caller may see: null = every row of the org; otherwise the rows of these domains,
 * plus the org-wide rows when `orgWide` is set (a restricted key sees them, but cannot delete them).
 */
export interface SuppressionScope {
  domainIds: string[] | null;
  orgWide: boolean;
}

function scopeCondition(db: Db, scope: SuppressionScope) {
  if (scope.domainIds === null) return db`true`;
  return scope.orgWide
    ? db`(domain_id = any(${scope.domainIds}) or domain_id is null)`
    : db`domain_id = any(${scope.domainIds})`;
}

/** The suppression that blocks `email` for a send from `domainId`: org-wide or that domain's. */
export async function findSuppression(
  db: Db,
  orgId: string,
  domainId: string | null,
  email: string,
): Promise<SuppressionRow | null> {
  const [row] = await db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${orgId} and email = ${email.toLowerCase()}
      and (domain_id is null or domain_id = ${domainId})
    order by domain_id nulls first limit 1`;
  return row ?? null;
}

/** Of many addresses (lower case), those suppressed for a send from `domainId` (one query). */
export async function findSuppressedEmails(
  db: Db,
  orgId: string,
  domainId: string | null,
  emails: string[],
): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const rows = await db<{ email: string }[]>`
    select distinct email from suppressions
    where org_id = ${orgId} and email = any(${emails.map((e) => e.toLowerCase())})
      and (domain_id is null or domain_id = ${domainId})`;
  return new Set(rows.map((r) => r.email));
}

/** Idempotent: returns the new row, or null when the address was already suppressed there. */
export async function addSuppression(db: Db, s: NewSuppression): Promise<SuppressionRow | null> {
  const [row] = await db<SuppressionRow[]>`
    insert into suppressions (id, org_id, email, domain_id, reason, source_email_id)
    values (${newId('sup')}, ${s.orgId}, ${s.email.toLowerCase()}, ${s.domainId}, ${s.reason}, ${s.sourceEmailId})
    on conflict (org_id, email, (coalesce(domain_id, ''))) do nothing
    returning *`;
  return row ?? null;
}

/** Adds the row or returns the one already there (whose reason may differ). */
export async function addOrGetSuppression(
  db: Db,
  s: NewSuppression,
): Promise<{ row: SuppressionRow; created: boolean }> {
  const row = await addSuppression(db, s);
  if (row) return { row, created: true };
  const [existing] = await db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${s.orgId} and email = ${s.email.toLowerCase()}
      and coalesce(domain_id, '') = ${s.domainId ?? ''}`;
  // Deleted between the two statements: insert again.
  return existing ? { row: existing, created: false } : await addOrGetSuppression(db, s);
}

export interface SuppressionFilter {
  email?: string | undefined;
  reason?: SuppressionReason | undefined;
  domainId?: string | undefined;
}

/** Newest first; fetches limit + 1 rows for `has_more`. */
export async function listSuppressions(
  db: Db,
  orgId: string,
  scope: SuppressionScope,
  filter: SuppressionFilter,
  page: Page,
): Promise<SuppressionRow[]> {
  const where = db`
    org_id = ${orgId} and ${scopeCondition(db, scope)}
    ${filter.email ? db`and email = ${filter.email.toLowerCase()}` : db``}
    ${filter.reason ? db`and reason = ${filter.reason}` : db``}
    ${filter.domainId ? db`and domain_id = ${filter.domainId}` : db``}`;
  if (page.before) {
    const rows = await db<SuppressionRow[]>`
      select * from suppressions where ${where} and id > ${page.before}
      order by id asc limit ${page.limit + 1}`;
    // Closest to the cursor first in time, newest first in the answer; the extra row (if any)
    // stays last so that listEnvelope trims it and reports has_more.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<SuppressionRow[]>`
    select * from suppressions where ${where} ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

/**
 * Rows named by an id or an address, within the scope, org-wide rows first, then newest. An
 * address may have several rows (org-wide and per domain); `domainId` narrows it to one.
 */
export async function findSuppressionsByRef(
  db: Db,
  orgId: string,
  ref: string,
  scope: SuppressionScope,
  domainId?: string,
): Promise<SuppressionRow[]> {
  const match = isId(ref, 'sup') ? db`id = ${ref}` : db`email = ${ref.toLowerCase()}`;
  return await db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${orgId} and ${match} and ${scopeCondition(db, scope)}
      ${domainId ? db`and domain_id = ${domainId}` : db``}
    order by domain_id nulls first, id desc`;
}

export async function deleteSuppressions(db: Db, orgId: string, ids: string[]): Promise<SuppressionRow[]> {
  return await db<SuppressionRow[]>`
    delete from suppressions where org_id = ${orgId} and id = any(${ids}) returning *`;
}
