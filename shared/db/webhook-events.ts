// The one read the webhook fan-out needs: events with the message fields their payloads show and
// the endpoints each one goes to.
import type { EventRow } from '../events.js';
import type { Db } from './pool.js';

export interface EventForWebhook extends EventRow {
  email_from: string | null;
  email_to: string[] | null;
  email_subject: string | null;
  email_kind: string | null;
  email_stream: string | null;
  email_tags: { name: string; value: string }[] | null;
  email_template_id: string | null;
  email_template_slug: string | null;
  email_template_version: number | null;
  recipient_email: string | null;
}

export interface EventToFanOut extends EventForWebhook {
  /** Enabled endpoints of the event's organization whose filter takes its type, by id. */
  webhook_ids: string[];
}

// The event with its message fields and matching endpoints; `src` is the set of event ids.
const FANOUT_SELECT = `
  select ev.*, e.from_address as email_from, e.to_addresses as email_to, e.subject as email_subject,
    e.kind as email_kind, e.stream as email_stream, e.tags as email_tags, e.template_id as email_template_id,
    e.template_slug as email_template_slug, e.template_version as email_template_version,
    r.email as recipient_email,
    array(select w.id from webhooks w
      where w.org_id = ev.org_id and w.status = 'enabled' and ev.type = any(w.events) order by w.id) as webhook_ids
  from src
  join events ev on ev.id = src.id
  left join emails e on e.id = ev.email_id
  left join email_recipients r on r.id = ev.recipient_id
  order by ev.id`;

/** Loads a batch of events for fan-out, each with its matching endpoints: one round trip. */
export async function loadEventsForFanout(db: Db, eventIds: string[]): Promise<EventToFanOut[]> {
  return await db<EventToFanOut[]>`
    with src as (select distinct unnest(${eventIds}::text[]) as id)
    ${db.unsafe(FANOUT_SELECT)}`;
}

/**
 * Claims up to `limit` events not yet fanned out, oldest first, locking them until the end of
 * the caller's transaction (which must mark them: `insertFanout`). SKIP LOCKED lets several
 * workers drain at once, each event going to one of them.
 */
export async function claimEventsForFanout(tx: Db, limit: number): Promise<EventToFanOut[]> {
  return await tx<EventToFanOut[]>`
    with src as (
      select id from events where webhooks_fanned_at is null
      order by id limit ${limit} for update skip locked)
    ${tx.unsafe(FANOUT_SELECT)}`;
}
