// SQL for tracking hits: the message and recipient a token names (with the metrics dimensions
// copied onto events) and first-time stamps.
import type { Mode } from '../keys.js';
import type { Db } from './pool.js';

export interface TrackingTarget {
  email_id: string;
  recipient_id: string;
  org_id: string;
  mode: Mode;
  domain_id: string;
  key_id: string | null;
  template_id: string | null;
  kind: string | null;
  provider: string | null;
  recipient: string;
  source: string;
  delivered_at: Date | null;
  opened_at: Date | null;
  clicked_at: Date | null;
  unsubscribed_at: Date | null;
}

/** The recipient row of that message (null when either is gone or they do not belong together). */
export async function getTrackingTarget(db: Db, emailId: string, recipientId: string): Promise<TrackingTarget | null> {
  const [row] = await db<TrackingTarget[]>`
    select e.id as email_id, r.id as recipient_id, e.org_id, e.mode, e.domain_id, e.key_id,
           e.template_id, e.kind, r.provider, r.email as recipient, e.source,
           r.delivered_at, r.opened_at, r.clicked_at, r.unsubscribed_at
    from email_recipients r join emails e on e.id = r.email_id
    where r.id = ${recipientId} and e.id = ${emailId}
    for update of r`;
  return row ?? null;
}

export type TrackedEvent = 'opened' | 'clicked' | 'unsubscribed';

/**
 * Stamps the first open / click / unsubscribe of a recipient (later hits keep the first time)
 * and moves the recipient's and the message's last event.
 */
export async function markTracked(
  db: Db,
  t: { emailId: string; recipientId: string; event: TrackedEvent },
): Promise<void> {
  const column = db(`${t.event}_at`);
  await db`
    update email_recipients
    set ${column} = coalesce(${column}, now()), last_event = ${t.event}, last_event_at = now(), updated_at = now()
    where id = ${t.recipientId}`;
  await db`
    update emails set last_event = ${t.event}, last_event_at = now(), updated_at = now()
    where id = ${t.emailId}`;
}

/** Times of the recipient's clicks since `since` on links other than `url`, most recent first. */
export async function otherLinkClicks(db: Db, recipientId: string, url: string, since: Date): Promise<Date[]> {
  const rows = await db<{ created_at: Date }[]>`
    select created_at from events
    where recipient_id = ${recipientId} and type = 'email.clicked' and created_at >= ${since}
      and url is distinct from ${url}
    order by created_at desc`;
  return rows.map((r) => r.created_at);
}
