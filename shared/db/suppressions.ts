// Suppressions: addresses that must not receive live mail, org-wide (domain_id null) or for one
// sending domain, and rules (`pattern`, shared/suppression-patterns.ts) that match many. The API
// manages them; the delivery engine checks them through suppression_reason() (one SQL function,
// sql/000400_suppression_rules.sql) and adds address rows.
import type { PendingQuery, Row } from 'postgres';
import { isId, newId } from '../ids.js';
import type { SuppressionPattern } from '../suppression-patterns.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';

export interface SuppressionRow {
  id: string;
  org_id: string;
  /** The address (lower case); null for a rule. */
  email: string | null;
  /** The rule (a glob with `*`); null for an address. */
  pattern: string | null;
  domain_id: string | null;
  reason: SuppressionReason;
  source_email_id: string | null;
  created_at: Date;
}

export interface NewSuppression {
  orgId: string;
  /** The address, or the rule when `pattern` is given (then `email` is ignored). */
  email: string;
  pattern?: SuppressionPattern | undefined;
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

/** The address row that blocks `email` for a send from `domainId`: org-wide or that domain's. */
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

type Fragment = PendingQuery<Row[]>;

/**
 * SQL: the reason `email` (lower case) is suppressed for a send of `orgId` from `domainId`
 * (null: org-wide rows and rules only), by an address row or a rule; null when it is not. The
 * one check every path that sends goes through (delivery, broadcasts, imports' counts).
 */
export function suppressionReasonSql(db: Db, orgId: Fragment, domainId: Fragment, email: Fragment): Fragment {
  return db`suppression_reason(${orgId}, ${domainId}, ${email})`;
}

/**
 * Of many addresses, those suppressed for a send from `domainId` (null: org-wide rows only), in
 * one set-based query: address rows by a join, rules only when the organization has any.
 */
export async function findSuppressedEmails(
  db: Db,
  orgId: string,
  domainId: string | null,
  emails: string[],
): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const lower = emails.map((e) => e.toLowerCase());
  const rows = await db<{ email: string }[]>`
    with x as (select distinct unnest(${lower}::text[]) as email)
    select x.email from x
    where exists (select 1 from suppressions s where s.org_id = ${orgId} and s.email = x.email
                    and (s.domain_id is null or s.domain_id = ${domainId}::text))
    union
    select x.email from x join suppressions s
      on s.org_id = ${orgId} and s.pattern is not null and s.pattern_key = any(suppression_keys(x.email))
         and x.email like s.pattern_like and (s.domain_id is null or s.domain_id = ${domainId}::text)
    where exists (select 1 from suppressions r where r.org_id = ${orgId} and r.pattern is not null)`;
  return new Set(rows.map((r) => r.email));
}

/** Idempotent: returns the new row, or null when the address (or rule) was already there. */
export async function addSuppression(db: Db, s: NewSuppression): Promise<SuppressionRow | null> {
  const p = s.pattern;
  const [row] = p
    ? await db<SuppressionRow[]>`
        insert into suppressions (id, org_id, pattern, pattern_key, pattern_like, domain_id, reason, source_email_id)
        values (${newId('sup')}, ${s.orgId}, ${p.pattern}, ${p.key}, ${p.like},
                ${s.domainId}, ${s.reason}, ${s.sourceEmailId})
        on conflict (org_id, pattern, (coalesce(domain_id, ''))) where pattern is not null do nothing
        returning *`
    : await db<SuppressionRow[]>`
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
  const match = s.pattern ? db`pattern = ${s.pattern.pattern}` : db`email = ${s.email.toLowerCase()}`;
  const [existing] = await db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${s.orgId} and ${match} and coalesce(domain_id, '') = ${s.domainId ?? ''}`;
  // Deleted between the two statements: insert again.
  return existing ? { row: existing, created: false } : await addOrGetSuppression(db, s);
}

export interface SuppressionFilter {
  email?: string | undefined;
  /** A rule, exactly as stored (lower case, runs of `*` folded). */
  pattern?: string | undefined;
  /** Only address rows, or only rules. */
  type?: 'address' | 'pattern' | undefined;
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
    ${filter.pattern ? db`and pattern = ${filter.pattern}` : db``}
    ${filter.type === 'address' ? db`and email is not null` : filter.type === 'pattern' ? db`and pattern is not null` : db``}
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
 * Rows named by an id, an address or a rule, within the scope, org-wide rows first, then newest.
 * An address may have several rows (org-wide and per domain); `domainId` narrows it to one.
 */
export async function findSuppressionsByRef(
  db: Db,
  orgId: string,
  ref: string,
  scope: SuppressionScope,
  domainId?: string,
): Promise<SuppressionRow[]> {
  const match = isId(ref, 'sup')
    ? db`id = ${ref}`
    : ref.includes('*')
      ? db`pattern = ${ref.toLowerCase().replace(/\*{2,}/g, '*')}`
      : db`email = ${ref.toLowerCase()}`;
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

/** The rows that block any of `emails` (lower case) for a send from `domainId`: org-wide or that domain's. */
export async function suppressionsOf(
  db: Db,
  orgId: string,
  domainId: string | null,
  emails: string[],
): Promise<SuppressionRow[]> {
  if (emails.length === 0) return [];
  return await db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${orgId} and email = any(${emails}) and (domain_id is null or domain_id = ${domainId})
    order by email, domain_id nulls first`;
}

export interface SuppressionSearch {
  /** An address (lower case): exact, or every address starting with it when `prefix`. */
  email?: { value: string; prefix: boolean } | undefined;
  reason?: SuppressionReason | undefined;
  /** A domain's rows; 'org' for the organization-wide rows only. */
  domainId?: string | undefined;
}

/** The console's search: newest first, `limit + 1` rows; `after`/`before` are ids. */
export async function searchSuppressions(
  db: Db,
  orgId: string,
  s: SuppressionSearch,
  page: Page,
): Promise<SuppressionRow[]> {
  const like = s.email?.prefix ? `${s.email.value.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const where = db`org_id = ${orgId}
    ${s.email ? (like ? db`and email like ${like}` : db`and email = ${s.email.value}`) : db``}
    ${s.reason ? db`and reason = ${s.reason}` : db``}
    ${s.domainId === 'org' ? db`and domain_id is null` : s.domainId ? db`and domain_id = ${s.domainId}` : db``}`;
  if (page.before) {
    const rows = await db<SuppressionRow[]>`
      select * from suppressions where ${where} and id > ${page.before} order by id asc limit ${page.limit + 1}`;
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<SuppressionRow[]>`
    select * from suppressions where ${where} ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

export async function getSuppression(db: Db, orgId: string, id: string): Promise<SuppressionRow | null> {
  const [row] = await db<SuppressionRow[]>`select * from suppressions where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

export interface BulkSuppression {
  /** The address (lower case), or null for a rule. */
  email: string | null;
  pattern: SuppressionPattern | null;
  domainId: string | null;
  reason: SuppressionReason;
}

/**
 * Adds many rows (addresses and rules), one statement for each kind, one array per column; rows
 * already there are kept as they are. Returns how many were added.
 */
export async function bulkAddSuppressions(db: Db, orgId: string, rows: BulkSuppression[]): Promise<number> {
  const addresses = rows.filter((r) => r.email !== null);
  const rules = rows.filter((r) => r.pattern !== null);
  let added = 0;
  if (addresses.length > 0) {
    const inserted = await db`
      insert into suppressions (id, org_id, email, domain_id, reason)
      select x.id, ${orgId}, x.email, x.domain_id, x.reason
      from unnest(${addresses.map(() => newId('sup'))}::text[], ${addresses.map((r) => r.email!)}::text[],
                  ${addresses.map((r) => r.domainId) as string[]}::text[], ${addresses.map((r) => r.reason)}::text[])
             as x(id, email, domain_id, reason)
      on conflict (org_id, email, (coalesce(domain_id, ''))) do nothing
      returning id`;
    added += inserted.length;
  }
  if (rules.length > 0) {
    const p = rules.map((r) => r.pattern!);
    const inserted = await db`
      insert into suppressions (id, org_id, pattern, pattern_key, pattern_like, domain_id, reason)
      select x.id, ${orgId}, x.pattern, x.pattern_key, x.like_pattern, x.domain_id, x.reason
      from unnest(${rules.map(() => newId('sup'))}::text[], ${p.map((x) => x.pattern)}::text[],
                  ${p.map((x) => x.key)}::text[], ${p.map((x) => x.like)}::text[],
                  ${rules.map((r) => r.domainId) as string[]}::text[], ${rules.map((r) => r.reason)}::text[])
             as x(id, pattern, pattern_key, like_pattern, domain_id, reason)
      on conflict (org_id, pattern, (coalesce(domain_id, ''))) where pattern is not null do nothing
      returning id`;
    added += inserted.length;
  }
  return added;
}

/** Every row the scope and filter select, oldest first, `size` rows at a time (a cursor). */
export function suppressionBatches(
  db: Db,
  orgId: string,
  scope: SuppressionScope,
  filter: SuppressionFilter,
  size = 1000,
): AsyncIterable<SuppressionRow[]> {
  return db<SuppressionRow[]>`
    select * from suppressions
    where org_id = ${orgId} and ${scopeCondition(db, scope)}
      ${filter.reason ? db`and reason = ${filter.reason}` : db``}
      ${filter.domainId ? db`and domain_id = ${filter.domainId}` : db``}
      ${filter.type === 'address' ? db`and email is not null` : filter.type === 'pattern' ? db`and pattern is not null` : db``}
    order by id`.cursor(size);
}
