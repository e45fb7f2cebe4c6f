// Contacts of an organization (DESIGN §5): one per lower-cased address, with free-form
// properties, a global unsubscribe flag and per-topic choices (contact_topics).
import type { PendingQuery, Row } from 'postgres';
import { isId, newId } from '../ids.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

export type PropertyValue = string | number | boolean | null;

export interface ContactRow {
  id: string;
  org_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, PropertyValue>;
  unsubscribed: boolean;
  automations_on_create: boolean;
  created_by_key_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Fields a caller may set; undefined = leave as is (on create: the column default). */
export interface ContactFields {
  firstName?: string | null | undefined;
  lastName?: string | null | undefined;
  /** Merged into the stored properties; a null value removes that property. */
  properties?: Record<string, PropertyValue> | undefined;
  unsubscribed?: boolean | undefined;
}

export interface UpsertContact extends ContactFields {
  orgId: string;
  email: string;
  keyId: string | null;
  /** False for a domain-restricted key's signup: it must start no automation. */
  startsAutomations: boolean;
}

export interface UpsertResult {
  contact: ContactRow;
  created: boolean;
  /** Whether this upsert may start automations (a later engine reads contacts.automations_on_create). */
  startsAutomations: boolean;
}

/**
 * Rows of a paged, newest-first list: `select` gives the rows of `from … where …` (without order or
 * limit). Fetches limit + 1 rows so that listEnvelope reports has_more.
 */
export async function pagedRows<R extends Row>(
  db: Db,
  page: Page,
  select: (cursor: PendingQuery<Row[]>, order: PendingQuery<Row[]>, limit: number) => PendingQuery<R[]>,
): Promise<R[]> {
  if (page.before) {
    const rows = await select(db`and id > ${page.before}`, db`order by id asc`, page.limit + 1);
    // Closest to the cursor first in time, newest first in the answer; the extra row stays last.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await select(page.after ? db`and id < ${page.after}` : db``, db`order by id desc`, page.limit + 1);
}

/** Non-null properties of a patch, as the jsonb merge removes keys set to null. */
function mergeExpr(db: Db, properties: Record<string, PropertyValue> | undefined, current: PendingQuery<Row[]>) {
  if (properties === undefined) return current;
  const removed = Object.keys(properties).filter((k) => properties[k] === null);
  const kept = Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== null));
  return db`(${current} || ${jsonParam(db, kept)}::jsonb) - ${removed}::text[]`;
}

/** Inserts the contact or updates the one with that address; tells which happened. */
export async function upsertContact(db: Db, c: UpsertContact): Promise<UpsertResult> {
  const email = c.email.toLowerCase();
  const props = mergeExpr(db, c.properties, db`'{}'::jsonb`);
  const [row] = await db<(ContactRow & { inserted: boolean })[]>`
    insert into contacts as t (id, org_id, email, first_name, last_name, properties, unsubscribed,
                               automations_on_create, created_by_key_id)
    values (${newId('ct')}, ${c.orgId}, ${email}, ${c.firstName ?? null}, ${c.lastName ?? null}, ${props},
            ${c.unsubscribed ?? false}, ${c.startsAutomations}, ${c.keyId})
    on conflict (org_id, email) do update set
      first_name = ${c.firstName === undefined ? db`t.first_name` : db`excluded.first_name`},
      last_name = ${c.lastName === undefined ? db`t.last_name` : db`excluded.last_name`},
      properties = ${mergeExpr(db, c.properties, db`t.properties`)},
      unsubscribed = ${c.unsubscribed === undefined ? db`t.unsubscribed` : db`excluded.unsubscribed`},
      updated_at = now()
    returning *, (xmax = 0) as inserted`;
  const { inserted, ...contact } = row!;
  return { contact, created: inserted, startsAutomations: c.startsAutomations };
}

/** Creates a contact for the address unless one exists; never changes an existing one. */
export async function ensureContact(
  db: Db,
  orgId: string,
  email: string,
  keyId: string | null,
): Promise<{ contact: ContactRow; created: boolean }> {
  const [row] = await db<ContactRow[]>`
    insert into contacts (id, org_id, email, created_by_key_id)
    values (${newId('ct')}, ${orgId}, ${email.toLowerCase()}, ${keyId})
    on conflict (org_id, email) do nothing
    returning *`;
  if (row) return { contact: row, created: true };
  const existing = await findContact(db, orgId, email);
  // Deleted between the two statements: try again.
  return existing ? { contact: existing, created: false } : await ensureContact(db, orgId, email, keyId);
}

/** By id (`ct_…`) or by address. */
export async function findContact(db: Db, orgId: string, ref: string): Promise<ContactRow | null> {
  const match = isId(ref, 'ct') ? db`id = ${ref}` : db`email = ${ref.toLowerCase()}`;
  const [row] = await db<ContactRow[]>`select * from contacts where org_id = ${orgId} and ${match}`;
  return row ?? null;
}

export async function updateContact(db: Db, orgId: string, id: string, f: ContactFields): Promise<ContactRow | null> {
  const [row] = await db<ContactRow[]>`
    update contacts set
      first_name = ${f.firstName === undefined ? db`first_name` : db`${f.firstName}`},
      last_name = ${f.lastName === undefined ? db`last_name` : db`${f.lastName}`},
      properties = ${mergeExpr(db, f.properties, db`properties`)},
      unsubscribed = ${f.unsubscribed === undefined ? db`unsubscribed` : db`${f.unsubscribed}`},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function deleteContact(db: Db, orgId: string, id: string): Promise<ContactRow | null> {
  const [row] = await db<ContactRow[]>`delete from contacts where org_id = ${orgId} and id = ${id} returning *`;
  return row ?? null;
}

export interface ContactFilter {
  email?: string | undefined;
  unsubscribed?: boolean | undefined;
}

/** Newest first; fetches limit + 1 rows. */
export async function listContacts(db: Db, orgId: string, filter: ContactFilter, page: Page): Promise<ContactRow[]> {
  return await pagedRows<ContactRow>(
    db,
    page,
    (cursor, order, limit) => db<ContactRow[]>`
      select * from contacts
      where org_id = ${orgId}
        ${filter.email ? db`and email = ${filter.email.toLowerCase()}` : db``}
        ${filter.unsubscribed === undefined ? db`` : db`and unsubscribed = ${filter.unsubscribed}`}
        ${cursor}
      ${order} limit ${limit}`,
  );
}

/** The organization's contacts: all of them and the unsubscribed (the console's Contacts page). */
export async function countContacts(db: Db, orgId: string): Promise<{ total: number; unsubscribed: number }> {
  const [row] = await db<{ total: string; unsubscribed: string }[]>`
    select count(*) as total, count(*) filter (where unsubscribed) as unsubscribed
    from contacts where org_id = ${orgId}`;
  return { total: Number(row!.total), unsubscribed: Number(row!.unsubscribed) };
}
