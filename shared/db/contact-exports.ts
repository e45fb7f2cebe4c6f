// Contact exports (DESIGN §16): the export row (its lease and result) and the reads that build
// the CSV: the property names in use, the topics, and pages of contacts in id order.
import { newId } from '../ids.js';
import type { SegmentFilter } from '../segment-filter.js';
import { pagedRows, type PropertyValue } from './contacts.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';
import { filterCondition, membershipCondition } from './segments.js';
import { jsonParam } from './params.js';

export type ExportStatus = 'queued' | 'running' | 'completed' | 'failed';

export interface ExportRow {
  id: string;
  org_id: string;
  key_id: string | null;
  status: ExportStatus;
  segment_id: string | null;
  segment_filter: SegmentFilter | null;
  rows: string;
  file_bytes: string;
  file_chunks: number;
  error: string | null;
  lease_token: string | null;
  lease_until: Date | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export async function insertExport(
  db: Db,
  e: { orgId: string; keyId: string | null; segmentId: string | null; filter: SegmentFilter | null },
): Promise<ExportRow> {
  const [row] = await db<ExportRow[]>`
    insert into contact_exports (id, org_id, key_id, status, segment_id, segment_filter)
    values (${newId('exp')}, ${e.orgId}, ${e.keyId}, 'queued', ${e.segmentId},
            ${e.filter === null ? null : jsonParam(db, e.filter)})
    returning *`;
  return row!;
}

export async function getExport(db: Db, orgId: string, id: string): Promise<ExportRow | null> {
  const [row] = await db<ExportRow[]>`select * from contact_exports where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

/** Newest first; fetches limit + 1 rows. */
export async function listExports(db: Db, orgId: string, page: Page): Promise<ExportRow[]> {
  return await pagedRows<ExportRow>(
    db,
    page,
    (cursor, order, limit) => db<ExportRow[]>`
      select * from contact_exports where org_id = ${orgId} ${cursor} ${order} limit ${limit}`,
  );
}

/** Takes the export for one worker; an export taken over starts again from its first byte. */
export async function claimExport(db: Db, id: string, token: string, leaseSeconds: number): Promise<ExportRow | null> {
  const [row] = await db<ExportRow[]>`
    update contact_exports set status = 'running', lease_token = ${token},
      lease_until = now() + make_interval(secs => ${leaseSeconds}), rows = 0, updated_at = now()
    where id = ${id} and status in ('queued', 'running') and (lease_until is null or lease_until < now())
    returning *`;
  if (row) await db`delete from file_chunks where owner_id = ${id}`;
  return row ?? null;
}

/** Renews the lease while the file is written; false when another worker took over. */
export async function renewExport(db: Db, id: string, token: string, leaseSeconds: number, rows: number) {
  const [row] = await db`
    update contact_exports set lease_until = now() + make_interval(secs => ${leaseSeconds}), rows = ${rows},
      updated_at = now()
    where id = ${id} and lease_token = ${token} and status = 'running' returning id`;
  return row !== undefined;
}

export async function finishExport(
  db: Db,
  id: string,
  token: string,
  r: { rows: number; bytes: number; chunks: number } | { error: string },
): Promise<void> {
  if ('error' in r) {
    await db`
      update contact_exports set status = 'failed', error = ${r.error}, lease_token = null, lease_until = null,
        completed_at = now(), updated_at = now()
      where id = ${id} and lease_token = ${token}`;
    await db`delete from file_chunks where owner_id = ${id}`;
    return;
  }
  await db`
    update contact_exports set status = 'completed', rows = ${r.rows}, file_bytes = ${r.bytes},
      file_chunks = ${r.chunks}, lease_token = null, lease_until = null, completed_at = now(), updated_at = now()
    where id = ${id} and lease_token = ${token}`;
}

/** The exported segment: its filter as fixed at request time, and its membership rows now. */
export type ExportScope = Pick<ExportRow, 'segment_id' | 'segment_filter'>;

const scope = (db: Db, orgId: string, s: ExportScope) => {
  if (s.segment_filter === null) return db`true`;
  return s.segment_id === null
    ? filterCondition(db, orgId, s.segment_filter)
    : membershipCondition(db, orgId, s.segment_id, s.segment_filter);
};

/** The property names the exported contacts use, sorted (at most `limit`). */
export async function exportPropertyNames(
  db: Db,
  orgId: string,
  filter: ExportScope,
  limit: number,
): Promise<string[]> {
  const rows = await db<{ name: string }[]>`
    select distinct jsonb_object_keys(c.properties) as name
    from contacts c where c.org_id = ${orgId} and ${scope(db, orgId, filter)}
    order by 1 limit ${limit}`;
  return rows.map((r) => r.name);
}

export interface ExportContact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, PropertyValue>;
  unsubscribed: boolean;
  created_at: Date;
  /** The contact's explicit topic choices: topic id → opt_in | opt_out. */
  topics: Record<string, string> | null;
}

/** The next page of contacts after `after`, in id order (keyset pagination). */
export async function exportPage(
  db: Db,
  orgId: string,
  filter: ExportScope,
  after: string | null,
  limit: number,
): Promise<ExportContact[]> {
  return await db<ExportContact[]>`
    select c.id, c.email, c.first_name, c.last_name, c.properties, c.unsubscribed, c.created_at,
           (select jsonb_object_agg(ct.topic_id, ct.subscription) from contact_topics ct where ct.contact_id = c.id) as topics
    from contacts c
    where c.org_id = ${orgId} and ${scope(db, orgId, filter)} ${after ? db`and c.id > ${after}` : db``}
    order by c.id limit ${limit}`;
}

export async function stalledExports(db: Db, graceSeconds: number, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from contact_exports
    where status in ('queued', 'running') and (lease_until is null or lease_until < now())
      and updated_at < now() - make_interval(secs => ${graceSeconds})
    order by updated_at limit ${limit}`;
  return rows.map((r) => r.id);
}

/** The organization's topic ids, oldest first (one column each in an export). */
export async function exportTopicIds(db: Db, orgId: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`select id from topics where org_id = ${orgId} order by id`;
  return rows.map((r) => r.id);
}
