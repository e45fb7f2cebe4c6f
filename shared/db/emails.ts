// Messages of the sending API: insert (one statement per table, however many messages), read,
// list, reschedule and cancel. Every read is scoped to what the calling key may see: its org, its
// mode (test and live are listed apart) and, for a restricted key, its domains.
import type { EventRow } from '../events.js';
import type { Mode } from '../keys.js';
import type { TlsFacts } from '../mail/outbound/types.js';
import { defaultStream, type Stream } from '../streams.js';
import type { Db } from './pool.js';
import { unnestRows, type ColumnSpec } from './unnest.js';
import { jsonParam } from './params.js';

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
  /**
   * 'smtp' (with the message as its client wrote it) from the relay; broadcasts and automations
   * set theirs; 'forward' for a received message sent on by an inbound route; 'system' for Tern's own
   * emails to an organization's admins (organization events).
   */
  source?: 'api' | 'smtp' | 'broadcast' | 'automation' | 'forward' | 'system';
  /** The delivery stream (shared/streams.ts); default: the one the source implies. */
  stream?: Stream;
  raw_mime?: Buffer | null;
  /** MAIL FROM of every recipient when set (a forward's SRS address); else each one's VERP address. */
  envelope_from?: string | null;
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

export interface EmailRow extends Omit<NewEmail, 'status' | 'stream'> {
  status: EmailStatus;
  stream: Stream;
  last_event: string | null;
  last_event_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** Set when the retention purge removed the content (bodies, raw MIME, attachments). */
  content_purged_at?: Date | null;
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
  tls: TlsFacts | null;
}

/** What a key may see: its org, its mode and, when restricted, its domains. */
export interface EmailScope {
  orgId: string;
  mode: Mode;
  /** Empty = every domain of the org. */
  domainIds: string[];
}

const EMAIL_COLUMNS: ColumnSpec<NewEmail> = {
  id: 'text',
  org_id: 'text',
  key_id: 'text',
  domain_id: 'text',
  mode: 'text',
  source: 'text',
  stream: 'text',
  from_address: 'text',
  from_email: 'text',
  to_addresses: 'text[]',
  cc_addresses: 'text[]',
  bcc_addresses: 'text[]',
  reply_to: 'text[]',
  subject: 'text',
  html: 'text',
  text: 'text',
  headers: 'jsonb',
  tags: 'jsonb',
  kind: 'text',
  topic_id: 'text',
  template_id: 'text',
  template_slug: 'text',
  template_version: 'integer',
  message_id: 'text',
  raw_mime: 'bytea',
  envelope_from: 'text',
  status: 'text',
  scheduled_at: 'timestamptz',
};

const RECIPIENT_COLUMNS: ColumnSpec<NewRecipient> = {
  id: 'text',
  email_id: 'text',
  org_id: 'text',
  field: 'text',
  address: 'text',
  email: 'text',
  domain: 'text',
  status: 'text',
  wait_reason: 'text',
};

const ATTACHMENT_COLUMNS: ColumnSpec<NewAttachment> = {
  email_id: 'text',
  position: 'integer',
  filename: 'text',
  content_type: 'text',
  content_id: 'text',
  size: 'integer',
  content: 'bytea',
};

/** Content bytes or recipients past which an insert gets LARGE_INSERT_TIMEOUT_MS. */
const LARGE_INSERT_BYTES = 4 * 1024 * 1024;
const LARGE_INSERT_RECIPIENTS = 2000;
const LARGE_INSERT_TIMEOUT_MS = 180_000;

function isLarge(emails: NewEmail[], recipients: NewRecipient[], attachments: NewAttachment[]): boolean {
  if (recipients.length > LARGE_INSERT_RECIPIENTS) return true;
  let bytes = 0;
  for (const e of emails) bytes += (e.html?.length ?? 0) + (e.text?.length ?? 0) + (e.raw_mime?.length ?? 0);
  for (const a of attachments) bytes += a.content.length;
  return bytes > LARGE_INSERT_BYTES;
}

/**
 * Inserts messages with their recipients and attachments in ONE statement (data-modifying CTEs,
 * one array parameter per column): a statement is atomic on its own, so no BEGIN/COMMIT round
 * trips, and the foreign keys are checked at its end, when every row is in. Idempotent by
 * default: rows whose ids are already stored are skipped, so running the same insert again (its
 * first run's outcome unknown after a lost connection) stores each message once. With
 * `skipStored: false` the rows are inserted without ON CONFLICT, whose speculative insertion costs
 * Postgres about an eighth more per row; a row already stored is then refused (23505, nothing
 * stored), as shared/errors.ts's `isUniqueViolation` tells.
 */
export async function insertEmails(
  db: Db,
  emails: NewEmail[],
  recipients: NewRecipient[],
  attachments: NewAttachment[],
  opts: { skipStored?: boolean } = {},
): Promise<void> {
  if (emails.length === 0) return;
  const skip = opts.skipStored ?? true;
  const onConflict = skip ? db`on conflict do nothing` : db``;
  // A request at the largest sizes the API allows (a 100-item batch of 120 MB, 15,000 recipients)
  // compresses its bodies and updates every index of three tables in one statement: on a busy
  // machine that takes longer than the pool's 15 s statement timeout, which is sized for the
  // small statements of everything else. Such an insert runs in a transaction with a timeout of
  // its own; the small ones (nearly all) stay one statement without BEGIN/COMMIT round trips.
  if ('begin' in db && isLarge(emails, recipients, attachments)) {
    await db.begin(async (tx) => {
      await tx.unsafe(`set local statement_timeout = ${LARGE_INSERT_TIMEOUT_MS}`);
      await insertEmails(tx, emails, recipients, attachments, opts);
    });
    return;
  }
  const m = unnestRows(
    db,
    emails.map((e) => ({
      ...e,
      source: e.source ?? 'api',
      stream: e.stream ?? defaultStream(e.source ?? 'api'),
      raw_mime: e.raw_mime ?? null,
      envelope_from: e.envelope_from ?? null,
    })),
    EMAIL_COLUMNS,
  );
  const insertMessages = db`insert into emails (${m.columns}) ${m.select} ${skip ? db`on conflict (id) do nothing` : db``}`;
  const r = recipients.length > 0 ? unnestRows(db, recipients, RECIPIENT_COLUMNS) : null;
  const a = attachments.length > 0 ? unnestRows(db, attachments, ATTACHMENT_COLUMNS) : null;
  if (!r && !a) {
    await insertMessages;
  } else if (!a) {
    await db`with m as (${insertMessages})
      insert into email_recipients (${r!.columns}) ${r!.select} ${onConflict}`;
  } else {
    await db`with m as (${insertMessages}),
      r as (${r ? db`insert into email_recipients (${r.columns}) ${r.select} ${onConflict}` : db`select 1`})
      insert into email_attachments (${a.columns}) ${a.select} ${onConflict}`;
  }
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
    select id, field, address, email, status, wait_reason, last_response, last_event, last_event_at, tls
    from email_recipients where email_id = ${emailId} order by id`;
}

export interface EmailFilters {
  status?: EmailStatus | undefined;
  kind?: string | undefined;
  stream?: Stream | undefined;
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
    ? db`and e.tags @> ${jsonParam(db, [f.tag.value === undefined ? { name: f.tag.name } : f.tag])}`
    : db``;
  const where = db`${scoped(db, s)}
    ${f.status ? db`and e.status = ${f.status}` : db``}
    ${f.kind ? db`and e.kind = ${f.kind}` : db``}
    ${f.stream ? db`and e.stream = ${f.stream}` : db``}
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
