// Messages of the sending API: insert (one statement per table, however many messages), read,
// list, reschedule and cancel. Every read is scoped to what the calling key may see: its org, its
// mode (test and live are listed apart) and, for a restricted key, its domains.
import type { EventRow } from '../events.js';
import type { Mode } from '../keys.js';
import type { Db } from './pool.js';

export type EmailStatus = 'scheduled' | 'queued' | 'processing' | 'sent' | 'canceled' | 'failed';

export interface NewEmail {
  id: string;
  org_id: string;
  key_id: string | null;
  domain_id: string;
  mode: Mode;
  from_address: string;
  from_email: string;
  to_addresses: string[];
  cc_addresses: string[];
  bcc_addresses: string[];
  reply_to: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  tags: { name: string; value: string }[];
  kind: string | null;
  topic_id: string | null;
  template_id: string | null;
  template_slug: string | null;
  template_version: number | null;
  message_id: string;
  status: 'scheduled' | 'queued';
  scheduled_at: Date | null;
  /** Set by the SMTP relay only: 'smtp' and the message as its client wrote it. */
  source?: 'api' | 'smtp';
  raw_mime?: Buffer | null;
}

export interface NewRecipient {
  id: string;
  email_id: string;
  org_id: string;
  field: 'to' | 'cc' | 'bcc';
  address: string;
  email: string;
  domain: string;
  status: 'scheduled' | 'queued';
  wait_reason: string | null;
}

export interface NewAttachment {
  email_id: string;
  position: number;
  filename: string;
  content_type: string | null;
  content_id: string | null;
  size: number;
  content: Buffer;
}

export interface EmailRow extends Omit<NewEmail, 'status'> {
  status: EmailStatus;
  last_event: string | null;
  last_event_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface RecipientRow {
  id: string;
  field: 'to' | 'cc' | 'bcc';
  address: string;
  email: string;
  status: string;
  wait_reason: string | null;
  last_response: string | null;
  last_event: string | null;
  last_event_at: Date | null;
}

/** What a key may see: its org, its mode and, when restricted, its domains. */
export interface EmailScope {
  orgId: string;
  mode: Mode;
  /** Empty = every domain of the org. */
  domainIds: string[];
}

/** Inserts messages with their recipients and attachments: three statements at most. */
export async function insertEmails(
  db: Db,
  emails: NewEmail[],
  recipients: NewRecipient[],
  attachments: NewAttachment[],
): Promise<void> {
  if (emails.length === 0) return;
  const emailRows = emails.map((e) => ({ ...e, headers: db.json(e.headers), tags: db.json(e.tags) }));
  await db`insert into emails ${db(emailRows as never)}`;
  if (recipients.length > 0) await db`insert into email_recipients ${db(recipients as never)}`;
  if (attachments.length > 0) await db`insert into email_attachments ${db(attachments as never)}`;
}

function scoped(db: Db, s: EmailScope) {
  return db`e.org_id = ${s.orgId} and e.mode = ${s.mode}
    ${s.domainIds.length > 0 ? db`and e.domain_id = any(${s.domainIds})` : db``}`;
}

export async function getEmail(db: Db, s: EmailScope, id: string): Promise<EmailRow | null> {
  const [row] = await db<EmailRow[]>`select e.* from emails e where e.id = ${id} and ${scoped(db, s)}`;
  return row ?? null;
}

export async function listRecipients(db: Db, emailId: string): Promise<RecipientRow[]> {
  return await db<RecipientRow[]>`
    select id, field, address, email, status, wait_reason, last_response, last_event, last_event_at
    from email_recipients where email_id = ${emailId} order by id`;
}

export interface EmailFilters {
  status?: EmailStatus | undefined;
  kind?: string | undefined;
  tag?: { name: string; value?: string | undefined } | undefined;
  to?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export interface Page {
  limit: number;
  after?: string | undefined;
  before?: string | undefined;
}

/** Newest first, `limit + 1` rows; `after`/`before` are ids (ids sort by creation time). */
export async function listEmails(db: Db, s: EmailScope, f: EmailFilters, page: Page): Promise<EmailRow[]> {
  const tag = f.tag
    ? db`and e.tags @> ${db.json([f.tag.value === undefined ? { name: f.tag.name } : f.tag] as never)}`
    : db``;
  const where = db`${scoped(db, s)}
    ${f.status ? db`and e.status = ${f.status}` : db``}
    ${f.kind ? db`and e.kind = ${f.kind}` : db``}
    ${tag}
    ${f.to ? db`and exists (select 1 from email_recipients r where r.email_id = e.id and r.email = ${f.to})` : db``}
    ${f.createdAfter ? db`and e.created_at > ${f.createdAfter}` : db``}
    ${f.createdBefore ? db`and e.created_at < ${f.createdBefore}` : db``}`;
  if (page.before) {
    const rows = await db<EmailRow[]>`
      select e.* from emails e where ${where} and e.id > ${page.before}
      order by e.id asc limit ${page.limit + 1}`;
    // The page is the `limit` rows just after the cursor, newest first; the extra row (proof of
    // has_more) stays last so that the list envelope drops it.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<EmailRow[]>`
    select e.* from emails e where ${where} ${page.after ? db`and e.id < ${page.after}` : db``}
    order by e.id desc limit ${page.limit + 1}`;
}

/** Events of one message in the order they happened; `after` is an event id. */
export async function listEmailEvents(
  db: Db,
  emailId: string,
  page: { limit: number; after?: string | undefined },
): Promise<EventRow[]> {
  return await db<EventRow[]>`
    select * from events where email_id = ${emailId} ${page.after ? db`and id > ${page.after}` : db``}
    order by id asc limit ${page.limit + 1}`;
}

/** Moves a scheduled message; null when it is not (or no longer) scheduled. */
export async function rescheduleEmail(db: Db, s: EmailScope, id: string, at: Date): Promise<EmailRow | null> {
  const [row] = await db<EmailRow[]>`
    update emails e set scheduled_at = ${at}, updated_at = now()
    where e.id = ${id} and e.status = 'scheduled' and ${scoped(db, s)}
    returning e.*`;
  if (!row) return null;
  await db`
    update email_recipients set wait_reason = ${scheduledReason(at)}, updated_at = now()
    where email_id = ${id} and status = 'scheduled'`;
  return row;
}

/**
 * Cancels a message that has not been handed to delivery yet. The status check is the lock: the
 * delivery worker moves `queued`/`scheduled` to `processing` with the same kind of conditional
 * update, so exactly one of the two wins.
 */
export async function cancelEmail(db: Db, s: EmailScope, id: string): Promise<EmailRow | null> {
  const [row] = await db<EmailRow[]>`
    update emails e set status = 'canceled', updated_at = now()
    where e.id = ${id} and e.status in ('scheduled', 'queued') and ${scoped(db, s)}
    returning e.*`;
  if (!row) return null;
  await db`
    update email_recipients set status = 'canceled', wait_reason = null, updated_at = now()
    where email_id = ${id} and status in ('scheduled', 'queued')`;
  return row;
}

export function scheduledReason(at: Date): string {
  return `scheduled for ${at.toISOString()}`;
}
