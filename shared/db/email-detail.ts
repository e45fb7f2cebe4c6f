// One message as the console's detail page shows it (docs/console.md "Email detail"): the row
// (either mode: the console sees live and test mail), every recipient with its delivery
// bookkeeping, the attachments' names and sizes, every event, and the "retry now" of a deferred
// recipient.
import type { EventRow } from '../events.js';
import type { EmailRow } from './emails.js';
import type { Db } from './pool.js';

export async function getOrgEmail(db: Db, orgId: string, id: string): Promise<EmailRow | null> {
  const [row] = await db<EmailRow[]>`select * from emails where id = ${id} and org_id = ${orgId}`;
  return row ?? null;
}

export interface RecipientDetail {
  id: string;
  field: 'to' | 'cc' | 'bcc';
  address: string;
  email: string;
  provider: string | null;
  status: string;
  wait_reason: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  attempt_started_at: Date | null;
  last_response: string | null;
  last_event: string | null;
  last_event_at: Date | null;
}

export async function listRecipientDetails(db: Db, emailId: string): Promise<RecipientDetail[]> {
  return await db<RecipientDetail[]>`
    select id, field, address, email, provider, status, wait_reason, attempts, next_attempt_at, attempt_started_at,
           last_response, last_event, last_event_at
    from email_recipients where email_id = ${emailId} order by id`;
}

export interface AttachmentMeta {
  filename: string;
  content_type: string | null;
  size: number;
}

export async function listAttachmentMeta(db: Db, emailId: string): Promise<AttachmentMeta[]> {
  return await db<AttachmentMeta[]>`
    select filename, content_type, size from email_attachments where email_id = ${emailId} order by position`;
}

/** Every event of the message, oldest first (at most `limit`). */
export async function listAllEmailEvents(db: Db, emailId: string, limit = 2000): Promise<EventRow[]> {
  return await db<EventRow[]>`select * from events where email_id = ${emailId} order by id asc limit ${limit}`;
}

/**
 * Makes a deferred recipient due now (no attempt in flight). Returns its new due time, when it
 * was due before (to find the delayed job that would have run it) and whether another pending
 * recipient of the message was due at that very moment (then that job must stay where it is);
 * null when the recipient is not deferred any more.
 */
export async function retryRecipientNow(
  db: Db,
  emailId: string,
  recipientId: string,
): Promise<{ due: Date; previousDue: Date | null; sharedDue: boolean } | null> {
  const [row] = await db<{ due: Date; previous_due: Date | null; shared_due: boolean }[]>`
    with old as (
      select id, next_attempt_at from email_recipients
      where id = ${recipientId} and email_id = ${emailId} for update)
    update email_recipients r
    set next_attempt_at = now(), updated_at = now(),
        wait_reason = 'retry requested in the console' ||
                      coalesce(' after: ' || nullif(r.last_response, ''), '')
    from old
    where r.id = old.id and r.status = 'delivery_delayed' and r.attempt_started_at is null
    returning r.next_attempt_at as due, old.next_attempt_at as previous_due,
      exists (select 1 from email_recipients o where o.email_id = ${emailId} and o.id <> r.id
              and o.status in ('queued', 'sent', 'delivery_delayed') and o.next_attempt_at = old.next_attempt_at)
        as shared_due`;
  return row ? { due: row.due, previousDue: row.previous_due, sharedDue: row.shared_due } : null;
}
