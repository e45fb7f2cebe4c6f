// Contact imports (DESIGN §16): the import row (its upload, mapping, lease and counters), the
// rows it could not apply, and the set-based statements that apply a batch of rows: one upsert
// of contacts and one of topic choices, each with one array per column.
import type { ImportMapping, ImportRow } from '../contact-import-mapping.js';
import { newId } from '../ids.js';
import { pagedRows } from './contacts.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

export type ImportStatus = 'receiving' | 'queued' | 'running' | 'completed' | 'failed';

export interface ImportRowRecord {
  id: string;
  org_id: string;
  key_id: string | null;
  status: ImportStatus;
  content_hash: string | null;
  dedupe_key: string | null;
  mapping: ImportMapping;
  trigger_automations: boolean;
  file_bytes: string;
  file_chunks: number;
  total_rows: string | null;
  rows: string;
  created: string;
  updated: string;
  skipped: string;
  failed: string;
  suppressed: string;
  error: string | null;
  lease_token: string | null;
  lease_until: Date | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** The row of an upload being received (status `receiving`, not visible through the API). */
export async function insertReceivingImport(db: Db, orgId: string, keyId: string | null): Promise<string> {
  const id = newId('imp');
  await db`
    insert into contact_imports (id, org_id, key_id, status, mapping, trigger_automations)
    values (${id}, ${orgId}, ${keyId}, 'receiving', '{}', false)`;
  return id;
}

export interface ReceivedUpload {
  contentHash: string;
  dedupeKey: string;
  mapping: ImportMapping;
  triggerAutomations: boolean;
  bytes: number;
  chunks: number;
}

/**
 * Queues a received upload. When the organization already has an import of the same file,
 * mapping and options (one not failed), that one is returned instead and `id` is not queued.
 */
export async function queueReceivedImport(
  db: Db,
  id: string,
  u: ReceivedUpload,
): Promise<{ queued: true } | { queued: false; existing: ImportRowRecord }> {
  try {
    const [row] = await db<{ org_id: string }[]>`
      update contact_imports set status = 'queued', content_hash = ${u.contentHash}, dedupe_key = ${u.dedupeKey},
        mapping = ${jsonParam(db, u.mapping)}, trigger_automations = ${u.triggerAutomations},
        file_bytes = ${u.bytes}, file_chunks = ${u.chunks}, updated_at = now()
      where id = ${id} and status = 'receiving'
        and not exists (select 1 from contact_imports o
                        where o.org_id = contact_imports.org_id and o.dedupe_key = ${u.dedupeKey})
      returning org_id`;
    if (row) return { queued: true };
  } catch (err) {
    // The same upload finished at the same moment in another request: the unique key chose it.
    if ((err as { code?: string }).code !== '23505') throw err;
  }
  const [existing] = await db<ImportRowRecord[]>`
    select i.* from contact_imports i join contact_imports me on me.org_id = i.org_id
    where me.id = ${id} and i.dedupe_key = ${u.dedupeKey}`;
  if (!existing) throw new Error(`import ${id} is no longer receiving`);
  return { queued: false, existing };
}

/** Removes an import (an upload that failed or found its twin) and its file. */
export async function deleteImport(db: Db, id: string): Promise<void> {
  await db`delete from file_chunks where owner_id = ${id}`;
  await db`delete from contact_imports where id = ${id}`;
}

export async function getImport(db: Db, orgId: string, id: string): Promise<ImportRowRecord | null> {
  const [row] = await db<ImportRowRecord[]>`
    select * from contact_imports where org_id = ${orgId} and id = ${id} and status <> 'receiving'`;
  return row ?? null;
}

/** Newest first; fetches limit + 1 rows. */
export async function listImports(db: Db, orgId: string, page: Page): Promise<ImportRowRecord[]> {
  return await pagedRows<ImportRowRecord>(
    db,
    page,
    (cursor, order, limit) => db<ImportRowRecord[]>`
      select * from contact_imports where org_id = ${orgId} and status <> 'receiving' ${cursor} ${order} limit ${limit}`,
  );
}

/**
 * Takes the import for one worker (a lease of `leaseSeconds`, renewed by every batch): null when
 * it is finished or another worker's lease is still running.
 */
export async function claimImport(
  db: Db,
  id: string,
  token: string,
  leaseSeconds: number,
): Promise<ImportRowRecord | null> {
  const [row] = await db<ImportRowRecord[]>`
    update contact_imports set status = 'running', lease_token = ${token},
      lease_until = now() + make_interval(secs => ${leaseSeconds}), started_at = coalesce(started_at, now()),
      updated_at = now()
    where id = ${id} and status in ('queued', 'running') and (lease_until is null or lease_until < now())
    returning *`;
  return row ?? null;
}

/** Notes the file's row count (and renews the lease: counting a large file takes a while). */
export async function setTotalRows(db: Db, id: string, token: string, total: number, leaseSeconds: number) {
  await db`
    update contact_imports set total_rows = ${total}, lease_until = now() + make_interval(secs => ${leaseSeconds}),
      updated_at = now()
    where id = ${id} and lease_token = ${token}`;
}

export interface BatchCounts {
  rows: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  suppressed: number;
}

export interface RowError {
  line: number;
  email: string | null;
  reason: string;
}

/**
 * Adds a batch's counts and failed rows, and renews the lease, in the transaction that applied
 * the batch; false when the lease was lost (another worker took over): the caller rolls back.
 */
export async function recordBatch(
  db: Db,
  id: string,
  token: string,
  leaseSeconds: number,
  c: BatchCounts,
  errors: RowError[],
): Promise<boolean> {
  const [row] = await db`
    update contact_imports set rows = rows + ${c.rows}, created = created + ${c.created},
      updated = updated + ${c.updated}, skipped = skipped + ${c.skipped}, failed = failed + ${c.failed},
      suppressed = suppressed + ${c.suppressed}, lease_until = now() + make_interval(secs => ${leaseSeconds}),
      updated_at = now()
    where id = ${id} and lease_token = ${token} and status = 'running'
    returning id`;
  if (!row) return false;
  if (errors.length > 0) {
    await db`
      insert into contact_import_errors (import_id, line, email, reason)
      select ${id}, * from unnest(${errors.map((e) => e.line)}::bigint[], ${errors.map((e) => e.email) as string[]}::text[],
                                  ${errors.map((e) => e.reason)}::text[])
      on conflict do nothing`;
  }
  return true;
}

/** Ends the import (completed, or failed with `error`); its file is removed. */
export async function finishImport(db: Db, id: string, token: string, error: string | null): Promise<void> {
  await db`
    update contact_imports set status = ${error === null ? 'completed' : 'failed'}, error = ${error},
      dedupe_key = ${error === null ? db`dedupe_key` : null}, lease_token = null, lease_until = null,
      completed_at = now(), updated_at = now()
    where id = ${id} and lease_token = ${token}`;
  await db`delete from file_chunks where owner_id = ${id}`;
}

export interface AppliedBatch {
  /** Addresses whose contact was created. */
  created: Set<string>;
  /** Addresses whose contact or topic choices changed. */
  changed: Set<string>;
}

/**
 * Applies rows (one per address, lower case) as one upsert of contacts and one of topic choices.
 * An empty value keeps the stored one; properties merge; `unsubscribed` only ever turns on.
 */
export async function applyContactRows(
  db: Db,
  orgId: string,
  keyId: string | null,
  triggerAutomations: boolean,
  rows: ImportRow[],
): Promise<AppliedBatch> {
  // One lock order for every writer: two imports touching the same contacts cannot deadlock.
  const sorted = [...rows].sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
  const upserted = await db<{ email: string; inserted: boolean }[]>`
    insert into contacts as t (id, org_id, email, first_name, last_name, properties, unsubscribed,
                               automations_on_create, created_by_key_id)
    select x.id, ${orgId}, x.email, x.first_name, x.last_name, x.props::jsonb, coalesce(x.unsub::boolean, false),
           ${triggerAutomations}, ${keyId}
    from unnest(${sorted.map(() => newId('ct'))}::text[], ${sorted.map((r) => r.email)}::text[],
                ${sorted.map((r) => r.firstName) as string[]}::text[], ${sorted.map((r) => r.lastName) as string[]}::text[],
                ${sorted.map((r) => JSON.stringify(r.properties))}::text[],
                -- as text: postgres.js sends an array of booleans as one boolean
                ${sorted.map((r) => (r.unsubscribed === null ? null : String(r.unsubscribed))) as string[]}::text[])
         with ordinality as x(id, email, first_name, last_name, props, unsub, n)
    order by x.n
    on conflict (org_id, email) do update set
      first_name = coalesce(excluded.first_name, t.first_name),
      last_name = coalesce(excluded.last_name, t.last_name),
      properties = t.properties || excluded.properties,
      unsubscribed = t.unsubscribed or excluded.unsubscribed,
      updated_at = now()
    where (t.first_name, t.last_name, t.properties, t.unsubscribed) is distinct from
          (coalesce(excluded.first_name, t.first_name), coalesce(excluded.last_name, t.last_name),
           t.properties || excluded.properties, t.unsubscribed or excluded.unsubscribed)
    returning t.email, (xmax = 0) as inserted`;
  const created = new Set(upserted.filter((r) => r.inserted).map((r) => r.email));
  const changed = new Set(upserted.filter((r) => !r.inserted).map((r) => r.email));
  const choices = sorted.flatMap((r) => r.topics.map((t) => ({ email: r.email, ...t })));
  if (choices.length > 0) {
    const moved = await db<{ email: string }[]>`
      with up as (
        insert into contact_topics as ct (contact_id, topic_id, subscription)
        select c.id, x.topic_id, x.subscription
        from unnest(${choices.map((c) => c.email)}::text[], ${choices.map((c) => c.id)}::text[],
                    ${choices.map((c) => c.subscription)}::text[]) with ordinality as x(email, topic_id, subscription, n)
        join contacts c on c.org_id = ${orgId} and c.email = x.email
        order by x.n
        on conflict (contact_id, topic_id) do update set subscription = excluded.subscription, updated_at = now()
        where ct.subscription is distinct from excluded.subscription
        returning ct.contact_id)
      select distinct c.email from up join contacts c on c.id = up.contact_id`;
    for (const m of moved) if (!created.has(m.email)) changed.add(m.email);
  }
  return { created, changed };
}

/** Imports that should be running but have no live worker (lease run out), oldest first. */
export async function stalledImports(db: Db, graceSeconds: number, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from contact_imports
    where status in ('queued', 'running') and (lease_until is null or lease_until < now())
      and updated_at < now() - make_interval(secs => ${graceSeconds})
    order by updated_at limit ${limit}`;
  return rows.map((r) => r.id);
}

/** Uploads whose web process died while receiving them: their rows and chunks go. */
export async function deleteAbandonedUploads(db: Db, olderThanSeconds: number): Promise<number> {
  const rows = await db<{ id: string }[]>`
    select id from contact_imports
    where status = 'receiving' and created_at < now() - make_interval(secs => ${olderThanSeconds}) limit 100`;
  for (const r of rows) await deleteImport(db, r.id);
  return rows.length;
}

/** The failed rows, by line, `size` at a time (a cursor). */
export function importErrorBatches(db: Db, importId: string, size = 1000): AsyncIterable<RowError[]> {
  return db<RowError[]>`
    select line::int as line, email, reason from contact_import_errors
    where import_id = ${importId} order by line`.cursor(size);
}
