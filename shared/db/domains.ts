// Sending domains of an organization.
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

export type DomainStatus = 'pending' | 'verified' | 'failed';

export interface DomainRow {
  id: string;
  org_id: string;
  name: string;
  status: DomainStatus;
  records: unknown[];
  dkim_selector: string;
  /** Sealed (shared/secrets.ts): SecretBox.open gives the PEM. */
  dkim_private_key: string | null;
  dkim_public_key: string | null;
  track_opens: boolean | null;
  track_clicks: boolean | null;
  verified_at: Date | null;
  last_checked_at: Date | null;
  /** When the scheduled re-check is due; null: not scheduled (shared/db/domain-recheck.ts). */
  next_check_at: Date | null;
  /** Definite failures of a verified domain's re-checks not yet confirmed (0 or 1). */
  recheck_failures: number;
  created_at: Date;
  /** The development launcher's demo domain (shared/domains/demo.ts). */
  demo: boolean;
  /** Inbound settings (shared/domains/inbound-routes.ts). */
  inbound: unknown;
  /** False: an established domain, whose warm-up ramp is skipped (DESIGN §14). */
  warmup: boolean;
}

export interface NewDomain {
  orgId: string;
  name: string;
  status?: DomainStatus;
  demo?: boolean;
  records?: unknown[];
  /** Sealed (shared/secrets.ts). */
  dkimPrivateKey?: string | null;
  dkimPublicKey?: string | null;
  /** False for an established domain (no warm-up ramp); default true. */
  warmup?: boolean;
}

export async function insertDomain(db: Db, d: NewDomain): Promise<DomainRow> {
  const status = d.status ?? 'pending';
  const [row] = await db<DomainRow[]>`
    insert into domains (id, org_id, name, status, records, dkim_private_key, dkim_public_key, verified_at, demo, warmup)
    values (${newId('dom')}, ${d.orgId}, ${d.name}, ${status}, ${jsonParam(db, d.records ?? [])},
            ${d.dkimPrivateKey ?? null}, ${d.dkimPublicKey ?? null},
            ${status === 'verified' ? new Date() : null}, ${d.demo ?? false}, ${d.warmup ?? true})
    returning *`;
  return row!;
}

export async function listOrgDomains(db: Db, orgId: string): Promise<DomainRow[]> {
  return await db<DomainRow[]>`select * from domains where org_id = ${orgId} order by name`;
}

/** The names of every domain of one org, verified or not. */
export async function listOrgDomainNames(db: Db, orgId: string): Promise<string[]> {
  const rows = await db<{ name: string }[]>`select name from domains where org_id = ${orgId}`;
  return rows.map((r) => r.name);
}

/** Resolves names or ids of domains of one org; returns the rows found, in input order. */
export async function findOrgDomains(db: Db, orgId: string, refs: string[]): Promise<Map<string, DomainRow>> {
  const rows = await db<DomainRow[]>`
    select * from domains where org_id = ${orgId} and (id = any(${refs}) or name = any(${refs}))`;
  const byRef = new Map<string, DomainRow>();
  for (const r of rows) {
    byRef.set(r.id, r);
    byRef.set(r.name, r);
  }
  return byRef;
}

/** A domain of the org by id or (already normalised) name. */
export async function getOrgDomain(db: Db, orgId: string, ref: string): Promise<DomainRow | null> {
  const [row] = await db<DomainRow[]>`
    select * from domains where org_id = ${orgId} and (id = ${ref} or name = ${ref}) limit 1`;
  return row ?? null;
}

export interface DomainPage {
  limit: number;
  after?: string | undefined;
  before?: string | undefined;
}

/**
 * Newest first, `after`/`before` ids, limit + 1 rows. `onlyIds` (a restricted key's domains)
 * limits the list; null lists every domain of the org.
 */
export async function listDomainsPage(
  db: Db,
  orgId: string,
  page: DomainPage,
  onlyIds: string[] | null,
): Promise<DomainRow[]> {
  const scope = onlyIds ? db`and id = any(${onlyIds})` : db``;
  if (page.before) {
    const rows = await db<DomainRow[]>`
      select * from domains where org_id = ${orgId} ${scope} and id > ${page.before}
      order by id asc limit ${page.limit + 1}`;
    return rows.reverse();
  }
  return await db<DomainRow[]>`
    select * from domains where org_id = ${orgId} ${scope} ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

/**
 * Per-domain tracking overrides (null means "use the organization default") and the warm-up
 * flag (false: an established domain).
 */
export async function updateDomainTracking(
  db: Db,
  id: string,
  patch: { track_opens?: boolean | null; track_clicks?: boolean | null; warmup?: boolean },
): Promise<DomainRow | null> {
  const columns = (['track_opens', 'track_clicks', 'warmup'] as const).filter((c) => patch[c] !== undefined);
  if (columns.length === 0) {
    const [row] = await db<DomainRow[]>`select * from domains where id = ${id}`;
    return row ?? null;
  }
  const [row] = await db<DomainRow[]>`
    update domains set ${db(patch as Record<string, boolean | null>, columns)} where id = ${id} returning *`;
  return row ?? null;
}

/** Stores inbound settings with the records they imply (MX_INBOUND while enabled). */
export async function updateDomainInbound(
  db: Db,
  id: string,
  inbound: { enabled: boolean; routes: unknown[] },
  records: unknown[],
): Promise<DomainRow | null> {
  const [row] = await db<DomainRow[]>`
    update domains set inbound = ${jsonParam(db, inbound)}, records = ${jsonParam(db, records)}
    where id = ${id} returning *`;
  return row ?? null;
}

/**
 * Stores the outcome of a DNS check. verified_at keeps the moment the domain first became
 * verified in its current verified streak and is cleared when a check no longer verifies it.
 * The check replaces any scheduled re-check in progress (its result is then dropped) and puts the
 * domain back on the re-check schedule at a random point of the interval.
 * Throws the unique violation of domains_verified_name_key when another org owns the name.
 */
export async function saveDomainCheck(
  db: Db,
  id: string,
  check: { status: DomainStatus; records: unknown[] },
): Promise<DomainRow | null> {
  const [row] = await db<DomainRow[]>`
    update domains set status = ${check.status}, records = ${jsonParam(db, check.records)},
      last_checked_at = now(), next_check_at = null, recheck_failures = 0,
      verified_at = case when ${check.status} = 'verified' then coalesce(verified_at, now()) else null end
    where id = ${id} returning *`;
  return row ?? null;
}

/** True when another organization holds `name` verified (at most one may: inbound routing). */
export async function isVerifiedElsewhere(db: Db, name: string, orgId: string): Promise<boolean> {
  const [row] = await db`
    select 1 from domains where name = ${name} and status = 'verified' and org_id <> ${orgId} limit 1`;
  return row !== undefined;
}

/** Messages of the domain that still need its DKIM key (not yet handed over or finished). */
export async function countUnfinishedDomainEmails(db: Db, domainId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from emails
    where domain_id = ${domainId} and status in ('scheduled', 'queued', 'processing')`;
  return row!.n;
}

export async function deleteDomain(db: Db, orgId: string, id: string): Promise<boolean> {
  const rows = await db`delete from domains where org_id = ${orgId} and id = ${id} returning id`;
  return rows.length > 0;
}

/** The development launcher's demo domain (the first one, should there be several). */
/**
 * Puts the demo domain back to verified where a DNS check failed it (before such checks skipped
 * it); returns how many rows changed. A name another domain holds verified is left alone.
 */
export async function restoreDemoDomain(db: Db): Promise<number> {
  const rows = await db`
    update domains d set status = 'verified', verified_at = coalesce(d.verified_at, now())
    where d.demo and d.status <> 'verified'
      and not exists (select 1 from domains o where o.name = d.name and o.status = 'verified')
    returning d.id`;
  return rows.length;
}

export async function findDemoDomain(db: Db): Promise<{ id: string; org_id: string; name: string } | null> {
  const [row] = await db<{ id: string; org_id: string; name: string }[]>`
    select id, org_id, name from domains where demo order by created_at, id limit 1`;
  return row ?? null;
}

export interface DoctorDomainRow {
  id: string;
  name: string;
  demo: boolean;
  records: unknown[];
  dkim_public_key: string | null;
  /** Opens or clicks tracked for this domain (its own setting, else its organization's). */
  tracking: boolean;
}

/** Every domain of the install (or those named `name`), with what `tern doctor` checks. */
export async function listDomainsForDoctor(db: Db, name: string | null): Promise<DoctorDomainRow[]> {
  return await db<DoctorDomainRow[]>`
    select d.id, d.name, d.demo, d.records, d.dkim_public_key,
           coalesce(d.track_opens, o.track_opens) or coalesce(d.track_clicks, o.track_clicks) as tracking
    from domains d join organizations o on o.id = d.org_id
    where ${name}::text is null or d.name = ${name}
    order by d.name, d.id`;
}

/** Domains of any organization named `ref` (an id or a normalised name): several orgs may add one name. */
export async function findDomainsByRef(db: Db, ref: string): Promise<{ id: string; org_id: string; name: string }[]> {
  return await db<{ id: string; org_id: string; name: string }[]>`
    select id, org_id, name from domains where id = ${ref} or name = ${ref} order by status = 'verified' desc, id`;
}
