// The event log's table (DESIGN §6): insert rows idempotently, mark them published, find those
// whose publication never happened. What an event is and how it is published: shared/events.ts.
import type { EventRow, NewEvent } from '../events.js';
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { unnestRows, type ColumnSpec } from './unnest.js';

/** Events as `events` rows (new ids), for `recordEvents` or a statement that inserts them itself. */
export function eventRows(events: NewEvent[]) {
  const now = new Date();
  return events.map((e) => ({
    id: newId('evt'),
    org_id: e.orgId,
    mode: e.mode,
    type: e.type,
    email_id: e.emailId ?? null,
    recipient_id: e.recipientId ?? null,
    inbound_id: e.inboundId ?? null,
    recipient: e.recipient ?? null,
    bounce_type: e.bounceType ?? null,
    detail: e.detail ?? null,
    url: e.url ?? null,
    domain_id: e.domainId ?? null,
    key_id: e.keyId ?? null,
    template_id: e.templateId ?? null,
    kind: e.kind ?? null,
    provider: e.provider ?? null,
    blocked: e.blocked ?? false,
    data: e.data ?? {},
    dedupe_key: e.dedupeKey,
    created_at: e.createdAt ?? now,
  }));
}

type NewEventRow = ReturnType<typeof eventRows>[number];

const EVENT_COLUMNS: ColumnSpec<NewEventRow> = {
  id: 'text',
  org_id: 'text',
  mode: 'text',
  type: 'text',
  email_id: 'text',
  recipient_id: 'text',
  inbound_id: 'text',
  recipient: 'text',
  bounce_type: 'text',
  detail: 'text',
  url: 'text',
  domain_id: 'text',
  key_id: 'text',
  template_id: 'text',
  kind: 'text',
  provider: 'text',
  blocked: 'boolean',
  data: 'jsonb',
  dedupe_key: 'text',
  created_at: 'timestamptz',
};

/** Inserts rows; those whose dedupe_key already exists are skipped. Returns the rows created. */
export async function insertEvents(db: Db, rows: ReturnType<typeof eventRows>): Promise<EventRow[]> {
  if (rows.length === 0) return [];
  const u = unnestRows(db, rows, EVENT_COLUMNS);
  return await db<EventRow[]>`
    insert into events (${u.columns}) ${u.select}
    on conflict (dedupe_key) do nothing
    returning *`;
}

export async function markEventsPublished(db: Db, ids: string[]): Promise<void> {
  await db`update events set published_at = now() where id = any(${ids}) and published_at is null`;
}

/** Ids of events recorded more than `olderThanMs` ago and never published, oldest first. */
export async function unpublishedEventIds(db: Db, olderThanMs: number, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from events
    where published_at is null and created_at < now() - make_interval(secs => ${olderThanMs / 1000})
    order by id limit ${limit}`;
  return rows.map((r) => r.id);
}
