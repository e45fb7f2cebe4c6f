// IP pools, their addresses and their assignments (sql/000510_ip_pools.sql, DESIGN §14).
// Which pool a message leaves from is decided in SQL, next to the message's load
// (`POOL_OF_EMAIL_SQL` in shared/db/delivery.ts), so a delivery costs no extra statement.
import { newId } from '../ids.js';
import type { Db, Sql } from './pool.js';

export type PoolStream = 'transactional' | 'broadcast';
export const POOL_STREAMS: readonly PoolStream[] = ['transactional', 'broadcast'];

export interface PoolAddressRow {
  address: string;
  warmup_started_at: Date;
}

export type PoolAssignment =
  { org_id: string; org_name: string } | { domain_id: string; domain: string; org_id: string } | { stream: PoolStream };

export interface PoolRow {
  id: string;
  name: string;
  ehlo: string | null;
  created_at: Date;
  addresses: PoolAddressRow[];
  assignments: PoolAssignment[];
}

/** The stream of the email `e` in SQL: its own `stream` column (shared/streams.ts). */
export const EMAIL_STREAM_SQL = `e.stream`;

/**
 * The pool of the email `e` (joined with its domain `d`), as JSON {id, name, ehlo, addresses:
 * [{address, warmup_started_at}]}, or null: the most specific assignment wins (domain, then
 * organization, then stream). An address on a blocklist (`listed_at`, the reputation watch) is
 * left out while the pool has one that is not.
 */
export const POOL_OF_EMAIL_SQL = `(
  select json_build_object('id', p.id, 'name', p.name, 'ehlo', p.ehlo, 'addresses',
           coalesce((select json_agg(json_build_object('address', x.address, 'warmup_started_at', x.warmup_started_at)
                                     order by x.address)
                     from ip_pool_addresses x where x.pool_id = p.id
                       and (x.listed_at is null or not exists (
                         select 1 from ip_pool_addresses y where y.pool_id = p.id and y.listed_at is null))),
                    '[]'::json))
  from ip_pool_assignments a join ip_pools p on p.id = a.pool_id
  where a.domain_id = e.domain_id or a.org_id = e.org_id or a.stream = ${EMAIL_STREAM_SQL}
  order by case when a.domain_id is not null then 0 when a.org_id is not null then 1 else 2 end
  limit 1)`;

async function poolsWhere(db: Db, ids: string[] | null): Promise<PoolRow[]> {
  const pools = await db<Omit<PoolRow, 'addresses' | 'assignments'>[]>`
    select id, name, ehlo, created_at from ip_pools
    where ${ids}::text[] is null or id = any(${ids}) order by name`;
  if (pools.length === 0) return [];
  const poolIds = pools.map((p) => p.id);
  const [addresses, assignments] = await Promise.all([
    db<(PoolAddressRow & { pool_id: string })[]>`
      select pool_id, address, warmup_started_at from ip_pool_addresses
      where pool_id = any(${poolIds}) order by address`,
    db<
      {
        pool_id: string;
        org_id: string | null;
        org_name: string | null;
        domain_id: string | null;
        domain: string | null;
        domain_org_id: string | null;
        stream: PoolStream | null;
      }[]
    >`
      select a.pool_id, a.org_id, o.name as org_name, a.domain_id, d.name as domain, d.org_id as domain_org_id, a.stream
      from ip_pool_assignments a
      left join organizations o on o.id = a.org_id
      left join domains d on d.id = a.domain_id
      where a.pool_id = any(${poolIds}) order by a.created_at, a.stream, a.org_id, a.domain_id`,
  ]);
  return pools.map((p) => ({
    ...p,
    addresses: addresses
      .filter((a) => a.pool_id === p.id)
      .map((a) => ({ address: a.address, warmup_started_at: a.warmup_started_at })),
    assignments: assignments
      .filter((a) => a.pool_id === p.id)
      .map((a): PoolAssignment => {
        if (a.domain_id) return { domain_id: a.domain_id, domain: a.domain!, org_id: a.domain_org_id! };
        if (a.org_id) return { org_id: a.org_id, org_name: a.org_name! };
        return { stream: a.stream! };
      }),
  }));
}

export async function listPools(db: Db): Promise<PoolRow[]> {
  return await poolsWhere(db, null);
}

export async function getPoolByName(db: Db, name: string): Promise<PoolRow | null> {
  const [row] = await db<{ id: string }[]>`select id from ip_pools where name = ${name}`;
  return row ? ((await poolsWhere(db, [row.id]))[0] ?? null) : null;
}

/** The pool that holds `address`, when one does. */
export async function poolOfAddress(db: Db, address: string): Promise<string | null> {
  const [row] = await db<{ name: string }[]>`
    select p.name from ip_pool_addresses x join ip_pools p on p.id = x.pool_id where x.address = ${address}`;
  return row?.name ?? null;
}

/**
 * Creates the pool when new (else keeps it, changing its EHLO name when one is given) and adds
 * the addresses that are not in it yet; their warm-up starts now.
 */
export async function addPool(sql: Sql, p: { name: string; ehlo: string | null; addresses: string[] }) {
  return await sql.begin(async (tx) => {
    const [pool] = await tx<{ id: string }[]>`
      insert into ip_pools (id, name, ehlo) values (${newId('ipp')}, ${p.name}, ${p.ehlo})
      on conflict (name) do update set ehlo = coalesce(excluded.ehlo, ip_pools.ehlo)
      returning id`;
    await tx`
      insert into ip_pool_addresses (address, pool_id)
      select unnest(${p.addresses}::text[]), ${pool!.id} on conflict (address) do nothing`;
    return pool!.id;
  });
}

export async function deletePool(db: Db, id: string): Promise<void> {
  await db`delete from ip_pools where id = ${id}`;
}

/** Assigns the pool to one target, replacing the pool that target had. */
export async function assignPool(
  sql: Sql,
  poolId: string,
  target: { org_id: string } | { domain_id: string } | { stream: PoolStream },
): Promise<void> {
  await sql.begin(async (tx) => {
    if ('org_id' in target) {
      await tx`delete from ip_pool_assignments where org_id = ${target.org_id}`;
      await tx`insert into ip_pool_assignments (pool_id, org_id) values (${poolId}, ${target.org_id})`;
    } else if ('domain_id' in target) {
      await tx`delete from ip_pool_assignments where domain_id = ${target.domain_id}`;
      await tx`insert into ip_pool_assignments (pool_id, domain_id) values (${poolId}, ${target.domain_id})`;
    } else {
      await tx`delete from ip_pool_assignments where stream = ${target.stream}`;
      await tx`insert into ip_pool_assignments (pool_id, stream) values (${poolId}, ${target.stream})`;
    }
  });
}

/** Removes the target's own assignment; returns how many there were (0 or 1). */
export async function unassignPool(
  db: Db,
  target: { org_id: string } | { domain_id: string } | { stream: PoolStream },
): Promise<number> {
  const rows =
    'org_id' in target
      ? await db`delete from ip_pool_assignments where org_id = ${target.org_id} returning pool_id`
      : 'domain_id' in target
        ? await db`delete from ip_pool_assignments where domain_id = ${target.domain_id} returning pool_id`
        : await db`delete from ip_pool_assignments where stream = ${target.stream} returning pool_id`;
  return rows.length;
}

/**
 * The pool addresses mail of each domain may leave from, for its SPF record: the domain's own
 * pool when it has one, else its organization's, else those of the stream pools (either stream
 * may apply to any domain).
 */
export async function poolAddressesOfDomains(db: Db, domainIds: string[]): Promise<Map<string, string[]>> {
  if (domainIds.length === 0) return new Map();
  const rows = await db<{ domain_id: string; addresses: string[] }[]>`
    select d.id as domain_id,
           coalesce((select array_agg(x.address order by x.address) from ip_pool_addresses x
                     where x.pool_id = any(coalesce(
                       (select array[a.pool_id] from ip_pool_assignments a where a.domain_id = d.id),
                       (select array[a.pool_id] from ip_pool_assignments a where a.org_id = d.org_id),
                       (select array_agg(a.pool_id) from ip_pool_assignments a where a.stream is not null)))),
                    '{}') as addresses
    from domains d where d.id = any(${domainIds})`;
  return new Map(rows.map((r) => [r.domain_id, r.addresses]));
}

/** Every pool address, for the DMARC summary's `own` flag. */
export async function listPoolAddresses(db: Db): Promise<string[]> {
  const rows = await db<{ address: string }[]>`select address from ip_pool_addresses`;
  return rows.map((r) => r.address);
}
