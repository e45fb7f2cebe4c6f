// The one read the webhook fan-out needs: an event with the message fields its payload shows.
import type { EventRow } from '../events.js';
import type { Db } from './pool.js';

export interface EventForWebhook extends EventRow {
  email_from: string | null;
  email_to: string[] | null;
  email_subject: string | null;
  email_kind: string | null;
  email_tags: { name: string; value: string }[] | null;
  email_template_id: string | null;
  email_template_slug: string | null;
  email_template_version: number | null;
  recipient_email: string | null;
}

export async function loadEventForWebhook(db: Db, eventId: string): Promise<EventForWebhook | null> {
  const [row] = await db<EventForWebhook[]>`
    select ev.*, e.from_address as email_from, e.to_addresses as email_to, e.subject as email_subject,
      e.kind as email_kind, e.tags as email_tags, e.template_id as email_template_id,
      e.template_slug as email_template_slug, e.template_version as email_template_version,
      r.email as recipient_email
    from events ev
    left join emails e on e.id = ev.email_id
    left join email_recipients r on r.id = ev.recipient_id
    where ev.id = ${eventId}`;
  return row ?? null;
}

/** Marks the event's fan-out done; call in the transaction that inserts its deliveries. */
export async function markEventFannedOut(db: Db, eventId: string): Promise<void> {
  await db`update events set webhooks_fanned_at = now() where id = ${eventId} and webhooks_fanned_at is null`;
}

/**
 * Events published more than `olderThanMs` ago that were never fanned out: their fan-out job
 * was lost (Redis flush or failover) or gave up. The fan-out sweeper enqueues them again.
 */
export async function unfannedEventIds(db: Db, olderThanMs: number, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from events
    where webhooks_fanned_at is null
      and published_at < now() - make_interval(secs => ${olderThanMs / 1000})
    order by published_at limit ${limit}`;
  return rows.map((r) => r.id);
}
