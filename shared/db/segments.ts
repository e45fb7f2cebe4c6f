// Segments (DESIGN §5): a name and a filter (shared/segment-filter.ts) compiled here into one
// parameterised SQL condition over `contacts c`. Values and property names travel only as
// parameters; field names map to fixed column fragments.
import type { PendingQuery, Row } from 'postgres';
import { newId } from '../ids.js';
import type { ContactField, FieldCondition, SegmentFilter } from '../segment-filter.js';
import { pagedRows, type ContactRow } from './contacts.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

/** The contact property a filter field names (`properties.<name>`); null for a contact column. */
export function propertyName(field: string): string | null {
  return field.startsWith('properties.') ? field.slice('properties.'.length) : null;
}

type Frag = PendingQuery<Row[]>;

export interface SegmentRow {
  id: string;
  org_id: string;
  name: string;
  filter: SegmentFilter;
  created_at: Date;
  updated_at: Date;
}

function column(db: Db, field: ContactField): Frag {
  switch (field) {
    case 'email':
      return db`c.email`;
    case 'first_name':
      return db`c.first_name`;
    case 'last_name':
      return db`c.last_name`;
    case 'unsubscribed':
      return db`c.unsubscribed`;
    case 'created_at':
      return db`c.created_at`;
  }
}

/** Case-insensitive substring tests on a text expression. */
function textMatch(db: Db, text: Frag, op: 'contains' | 'starts_with' | 'ends_with', value: string): Frag {
  if (op === 'contains') return db`strpos(lower(${text}), lower(${value}::text)) > 0`;
  if (op === 'starts_with') return db`starts_with(lower(${text}), lower(${value}::text))`;
  return db`right(lower(${text}), char_length(${value}::text)) = lower(${value}::text)`;
}

const COMPARE = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

function compare(db: Db, left: Frag, op: keyof typeof COMPARE, right: Frag): Frag {
  return db`${left} ${db.unsafe(COMPARE[op])} ${right}`;
}

function columnCondition(db: Db, field: ContactField, c: FieldCondition): Frag {
  const col = column(db, field);
  const lower = (v: unknown) => (field === 'email' && typeof v === 'string' ? v.toLowerCase() : v);
  switch (c.op) {
    case 'eq':
      if (c.value === null) return db`${col} is null`;
      return field === 'unsubscribed'
        ? db`${col} = ${c.value as boolean}`
        : db`${col} = ${lower(c.value) as string}::text`;
    case 'in':
      return db`${col} = any(${(c.value as string[]).map(lower) as string[]}::text[])`;
    case 'contains':
    case 'starts_with':
    case 'ends_with':
      return textMatch(db, col, c.op, c.value as string);
    case 'exists':
      return c.value ? db`${col} is not null` : db`${col} is null`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return compare(db, col, c.op, db`${c.value as string}::timestamptz`);
    default:
      throw new Error(`segment filter: op ${c.op} reached the compiler`);
  }
}

function propertyCondition(db: Db, name: string, c: FieldCondition): Frag {
  const json = db`(c.properties -> ${name}::text)`;
  const text = db`(c.properties ->> ${name}::text)`;
  const typed = (type: string, cond: Frag) => db`case when jsonb_typeof(${json}) = ${type} then ${cond} else false end`;
  switch (c.op) {
    case 'eq':
      return c.value === null
        ? db`(${json} is null or ${json} = 'null'::jsonb)`
        : db`${json} = ${jsonParam(db, c.value)}::jsonb`;
    case 'in':
      return db`exists (select 1 from jsonb_array_elements(${jsonParam(db, c.value)}::jsonb) e where e = ${json})`;
    case 'contains':
    case 'starts_with':
    case 'ends_with':
      return typed('string', textMatch(db, text, c.op, c.value as string));
    case 'exists':
      return c.value ? db`c.properties ? ${name}::text` : db`not (c.properties ? ${name}::text)`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return typeof c.value === 'number'
        ? typed('number', compare(db, db`${text}::numeric`, c.op, db`${c.value}::numeric`))
        : typed('string', compare(db, db`${text} collate "C"`, c.op, db`${c.value as string}::text collate "C"`));
    default:
      throw new Error(`segment filter: op ${c.op} reached the compiler`);
  }
}

/** A never-null condition: `not` and the negative ops then read as plain negations. */
function leaf(db: Db, c: FieldCondition): Frag {
  if (c.op === 'neq') return db`not ${leaf(db, { ...c, op: 'eq' })}`;
  if (c.op === 'not_in') return db`not ${leaf(db, { ...c, op: 'in' })}`;
  const prop = propertyName(c.field);
  const cond = prop === null ? columnCondition(db, c.field as ContactField, c) : propertyCondition(db, prop, c);
  return db`coalesce((${cond}), false)`;
}

/** Subscribed = the contact's own choice for the topic, else the topic's default, is opt_in. */
function topicCondition(db: Db, orgId: string, topicId: string, subscribed: boolean): Frag {
  const effective = db`coalesce(
    (select ct.subscription from contact_topics ct where ct.contact_id = c.id and ct.topic_id = ${topicId}),
    (select t.default_subscription from topics t where t.id = ${topicId} and t.org_id = ${orgId}))`;
  const yes = db`coalesce(${effective} = 'opt_in', false)`;
  return subscribed ? yes : db`not ${yes}`;
}

function join(db: Db, parts: Frag[], op: 'and' | 'or', empty: Frag): Frag {
  if (parts.length === 0) return empty;
  return parts.reduce((acc, p) => (op === 'and' ? db`${acc} and ${p}` : db`${acc} or ${p}`));
}

/** The filter as a SQL boolean over the row alias `c` of contacts. */
export function filterCondition(db: Db, orgId: string, f: SegmentFilter): Frag {
  if ('all' in f)
    return db`(${join(
      db,
      f.all.map((x) => filterCondition(db, orgId, x)),
      'and',
      db`true`,
    )})`;
  if ('any' in f)
    return db`(${join(
      db,
      f.any.map((x) => filterCondition(db, orgId, x)),
      'or',
      db`false`,
    )})`;
  if ('not' in f) return db`(not ${filterCondition(db, orgId, f.not)})`;
  if ('topic' in f) return db`(${topicCondition(db, orgId, f.topic, f.subscribed)})`;
  return db`(${leaf(db, f)})`;
}

/**
 * Membership of the segment as a SQL boolean over `c`: a contact an automation added
 * (segment_members.included) is in; one it removed is out; any other is in when the filter
 * selects it.
 */
export function membershipCondition(db: Db, orgId: string, segmentId: string, filter: SegmentFilter): Frag {
  return db`coalesce(
    (select m.included from segment_members m where m.segment_id = ${segmentId} and m.contact_id = c.id),
    ${filterCondition(db, orgId, filter)})`;
}

/** Adds the contact to the segment (`included`) or takes it out, whatever the filter says. */
export async function setSegmentMember(db: Db, segmentId: string, contactId: string, included: boolean): Promise<void> {
  await db`
    insert into segment_members (segment_id, contact_id, included) values (${segmentId}, ${contactId}, ${included})
    on conflict (segment_id, contact_id) do update set included = excluded.included, updated_at = now()`;
}

/** Of `segments`, those the contact is in now (each by its filter and its added members). */
export async function segmentsHolding(db: Db, orgId: string, contactId: string, segments: SegmentRow[]) {
  const held: SegmentRow[] = [];
  for (const s of segments) {
    const [row] = await db<{ in: boolean }[]>`
      select ${membershipCondition(db, orgId, s.id, s.filter)} as in
      from contacts c where c.org_id = ${orgId} and c.id = ${contactId}`;
    if (row?.in) held.push(s);
  }
  return held;
}

/** The contacts in the segment, newest first; fetches limit + 1 rows. */
export async function listSegmentContacts(
  db: Db,
  orgId: string,
  segment: Pick<SegmentRow, 'id' | 'filter'>,
  page: Page,
): Promise<ContactRow[]> {
  return await pagedRows<ContactRow>(
    db,
    page,
    (cursor, order, limit) => db<ContactRow[]>`
      select c.* from contacts c
      where c.org_id = ${orgId} and ${membershipCondition(db, orgId, segment.id, segment.filter)} ${cursor}
      ${order} limit ${limit}`,
  );
}

/** The segments of the organization with these ids. */
export async function findSegments(db: Db, orgId: string, ids: string[]): Promise<SegmentRow[]> {
  if (ids.length === 0) return [];
  return await db<SegmentRow[]>`select * from segments where org_id = ${orgId} and id = any(${ids})`;
}

export async function insertSegment(
  db: Db,
  s: { orgId: string; name: string; filter: SegmentFilter },
): Promise<SegmentRow> {
  const [row] = await db<SegmentRow[]>`
    insert into segments (id, org_id, name, filter)
    values (${newId('seg')}, ${s.orgId}, ${s.name}, ${jsonParam(db, s.filter)}::jsonb)
    returning *`;
  return row!;
}

export async function findSegment(db: Db, orgId: string, id: string): Promise<SegmentRow | null> {
  const [row] = await db<SegmentRow[]>`select * from segments where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

export async function listSegments(db: Db, orgId: string, page: Page): Promise<SegmentRow[]> {
  return await pagedRows<SegmentRow>(
    db,
    page,
    (cursor, order, limit) => db<SegmentRow[]>`
      select * from segments where org_id = ${orgId} ${cursor} ${order} limit ${limit}`,
  );
}

export async function updateSegment(
  db: Db,
  orgId: string,
  id: string,
  f: { name?: string | undefined; filter?: SegmentFilter | undefined },
): Promise<SegmentRow | null> {
  const [row] = await db<SegmentRow[]>`
    update segments set
      name = ${f.name === undefined ? db`name` : db`${f.name}`},
      filter = ${f.filter === undefined ? db`filter` : db`${jsonParam(db, f.filter)}::jsonb`},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function deleteSegment(db: Db, orgId: string, id: string): Promise<SegmentRow | null> {
  const [row] = await db<SegmentRow[]>`delete from segments where org_id = ${orgId} and id = ${id} returning *`;
  return row ?? null;
}

/** How many contacts are in a segment now (its filter and its added members, as listSegmentContacts). */
export async function countSegmentContacts(
  db: Db,
  orgId: string,
  segment: Pick<SegmentRow, 'id' | 'filter'>,
): Promise<number> {
  const [row] = await db<{ n: string }[]>`
    select count(*) as n from contacts c
    where c.org_id = ${orgId} and ${membershipCondition(db, orgId, segment.id, segment.filter)}`;
  return Number(row!.n);
}
