// SQL of the reputation watch (sql/000701_reputation_watch.sql; shared/reputation/watch.ts):
// what is watched, the answers of the zones, who hears about a listing, and who reads it.
import type { RblStatus } from '../reputation/dnsbl.js';
import type { Db } from './pool.js';

export type RblKind = 'ip' | 'domain';

export interface RblCheckRow {
  kind: RblKind;
  target: string;
  zone: string;
  status: RblStatus;
  listed: boolean;
  answer: string | null;
  checked_at: Date;
  listed_since: Date | null;
}

/** Moves the schedule on when the check is due; true: this process runs it. */
export async function claimWatchRun(db: Db, minutes: number): Promise<boolean> {
  const rows = await db`
    update rbl_schedule set next_at = now() + make_interval(secs => ${minutes * 60})
    where next_at <= now() returning next_at`;
  return rows.length > 0;
}

/** Every IP-pool address with its pool's name. */
export async function poolAddresses(db: Db): Promise<{ address: string; pool: string }[]> {
  return await db<{ address: string; pool: string }[]>`
    select x.address, p.name as pool from ip_pool_addresses x join ip_pools p on p.id = x.pool_id order by x.address`;
}

/** Verified domains that send (not the demo domain), with their organization. */
export async function watchedDomains(db: Db): Promise<{ id: string; org_id: string; name: string }[]> {
  return await db<{ id: string; org_id: string; name: string }[]>`
    select id, org_id, name from domains where status = 'verified' and not demo order by name`;
}

/**
 * Stores one target's answers (rows of zones no longer configured go) and says whether the
 * target was listed before and is listed after. An unknown answer keeps the zone's verdict.
 */
export async function recordAnswers(
  tx: Db,
  kind: RblKind,
  target: string,
  answers: { zone: string; status: RblStatus; answer: string | null }[],
): Promise<{ before: boolean; after: boolean; zones: { zone: string; answer: string | null }[] }> {
  const prior = await tx<{ zone: string; listed: boolean }[]>`
    select zone, listed from rbl_checks where kind = ${kind} and target = ${target} for update`;
  const zones = answers.map((a) => a.zone);
  await tx`delete from rbl_checks where kind = ${kind} and target = ${target} and zone <> all(${zones}::text[])`;
  const rows = await tx<RblCheckRow[]>`
    insert into rbl_checks as c (kind, target, zone, status, listed, answer, listed_since)
    select ${kind}, ${target}, z.zone, z.status, z.status = 'listed', z.answer,
           case when z.status = 'listed' then now() end
    from unnest(${zones}::text[], ${answers.map((a) => a.status)}::text[], ${answers.map((a) => a.answer)}::text[])
      as z(zone, status, answer)
    on conflict (kind, target, zone) do update set
      status = excluded.status, answer = excluded.answer, checked_at = now(),
      listed = case when excluded.status = 'unknown' then c.listed else excluded.status = 'listed' end,
      listed_since = case
        when excluded.status = 'listed' then coalesce(c.listed_since, now())
        when excluded.status = 'clear' then null
        else c.listed_since end
    returning *`;
  const listed = rows.filter((r) => r.listed);
  return {
    before: prior.some((r) => r.listed && zones.includes(r.zone)),
    after: listed.length > 0,
    zones: listed.map((r) => ({ zone: r.zone, answer: r.answer })),
  };
}

/** Takes a listed pool address out of rotation (listed_at), or puts it back. */
export async function setAddressListed(db: Db, address: string, listed: boolean): Promise<void> {
  await db`
    update ip_pool_addresses set listed_at = case when ${listed} then coalesce(listed_at, now()) end
    where address = ${address}`;
}

/**
 * The organizations whose mail may leave from `address`: those its pool is assigned to (directly,
 * through one of their domains, or through a stream: everyone); for an address in no pool (the
 * host's), every organization.
 */
export async function orgsOfAddress(db: Db, address: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select o.id from organizations o
    where not exists (select 1 from ip_pool_addresses x where x.address = ${address})
       or exists (
         select 1 from ip_pool_addresses x
         join ip_pool_assignments a on a.pool_id = x.pool_id
         left join domains d on d.id = a.domain_id
         where x.address = ${address} and (a.org_id = o.id or d.org_id = o.id or a.stream is not null))
    order by o.id`;
  return rows.map((r) => r.id);
}

/** Every stored answer (the Prometheus gauge, `tern rbl check`). */
export async function allChecks(db: Db): Promise<RblCheckRow[]> {
  return await db<RblCheckRow[]>`select * from rbl_checks order by kind, target, zone`;
}

/** The answers about what the organization sends from: its domains and the addresses its mail may use. */
export async function orgChecks(db: Db, orgId: string): Promise<RblCheckRow[]> {
  return await db<RblCheckRow[]>`
    select c.* from rbl_checks c
    where (c.kind = 'domain' and c.target in (select name from domains where org_id = ${orgId}))
       or (c.kind = 'ip' and (
         not exists (select 1 from ip_pool_addresses x where x.address = c.target)
         or exists (
           select 1 from ip_pool_addresses x
           join ip_pool_assignments a on a.pool_id = x.pool_id
           left join domains d on d.id = a.domain_id
           where x.address = c.target and (a.org_id = ${orgId} or d.org_id = ${orgId} or a.stream is not null))))
    order by c.listed desc, c.kind, c.target, c.zone`;
}
