// SQL of the delivery engine: loading messages for delivery, claiming them, daily caps, holds and
// the sweeper's look-up. Per-recipient attempt bookkeeping (recorded before and after SMTP) is
// shared/db/delivery-attempts.ts; suppressions are shared/db/suppressions.ts.
import type { Db, Sql } from './pool.js';

export interface DeliveryEmail {
  id: string;
  org_id: string;
  key_id: string | null;
  domain_id: string;
  mode: 'live' | 'test';
  source: 'api' | 'smtp' | 'broadcast' | 'automation';
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
  kind: string | null;
  topic_id: string | null;
  template_id: string | null;
  message_id: string;
  raw_mime: Buffer | null;
  status: 'scheduled' | 'queued' | 'processing' | 'sent' | 'canceled' | 'failed';
  scheduled_at: Date | null;
  created_at: Date;
  sending_paused: boolean;
  daily_cap: number | null;
  org_track_opens: boolean;
  org_track_clicks: boolean;
  alert_rules: unknown[];
  domain_name: string;
  dkim_selector: string;
  dkim_private_key: string | null;
  domain_verified_at: Date | null;
  domain_track_opens: boolean | null;
  domain_track_clicks: boolean | null;
  has_attachments: boolean;
}

export type RecipientStatus =
  'scheduled' | 'queued' | 'sent' | 'delivery_delayed' | 'delivered' | 'bounced' | 'rejected' | 'failed' | 'canceled';

export interface DeliveryRecipient {
  id: string;
  email_id: string;
  field: 'to' | 'cc' | 'bcc';
  address: string;
  email: string;
  domain: string;
  provider: string | null;
  status: RecipientStatus;
  attempts: number;
  next_attempt_at: Date | null;
  attempt_started_at: Date | null;
  attempt_job: string | null;
  cap_day: string | null;
  /** On the org's suppression list (org-wide or for the message's domain). */
  suppressed: boolean;
}

export const PENDING: RecipientStatus[] = ['queued', 'sent', 'delivery_delayed'];

const DELIVERY_EMAIL_COLUMNS = `
  e.*, o.sending_paused, o.daily_cap, o.track_opens as org_track_opens, o.track_clicks as org_track_clicks,
  o.alert_rules, d.name as domain_name, d.dkim_selector, d.dkim_private_key, d.verified_at as domain_verified_at,
  d.track_opens as domain_track_opens, d.track_clicks as domain_track_clicks,
  exists (select 1 from email_attachments a where a.email_id = e.id) as has_attachments`;

export async function getDeliveryEmail(db: Db, id: string): Promise<DeliveryEmail | null> {
  return (await getDeliveryEmails(db, [id]))[0] ?? null;
}

/** Several messages at once (for the jobs of one batch); missing ids are left out. */
export async function getDeliveryEmails(db: Db, ids: string[]): Promise<DeliveryEmail[]> {
  return await db<DeliveryEmail[]>`
    select ${db.unsafe(DELIVERY_EMAIL_COLUMNS)}
    from emails e
    join organizations o on o.id = e.org_id
    join domains d on d.id = e.domain_id
    where e.id = any(${ids})`;
}

export interface StoredAttachment {
  filename: string;
  content_type: string | null;
  content_id: string | null;
  content: Buffer;
}

export async function listAttachments(db: Db, emailId: string): Promise<StoredAttachment[]> {
  return await db<StoredAttachment[]>`
    select filename, content_type, content_id, content from email_attachments
    where email_id = ${emailId} order by position`;
}

export async function pendingRecipients(db: Db, emailId: string): Promise<DeliveryRecipient[]> {
  return await pendingRecipientsOf(db, [emailId]);
}

/** The pending recipients of several messages, by message then id. */
export async function pendingRecipientsOf(db: Db, emailIds: string[]): Promise<DeliveryRecipient[]> {
  return await db<DeliveryRecipient[]>`
    select r.id, r.email_id, r.field, r.address, r.email, r.domain, r.provider, r.status, r.attempts,
           r.next_attempt_at, r.attempt_started_at, r.attempt_job, r.cap_day::text as cap_day,
           exists (select 1 from suppressions s where s.org_id = r.org_id and s.email = lower(r.email)
                   and (s.domain_id is null or s.domain_id = e.domain_id)) as suppressed
    from email_recipients r join emails e on e.id = r.email_id
    where r.email_id = any(${emailIds}) and r.status = any(${PENDING}) order by r.email_id, r.id`;
}

/** Takes a message from the API's hands; false when it was canceled (or already taken). */
export async function claimEmail(db: Db, id: string): Promise<boolean> {
  const rows = await db`
    update emails set status = 'processing', updated_at = now()
    where id = ${id} and status in ('scheduled', 'queued') returning id`;
  return rows.length === 1;
}

/** `claimEmail` for several messages; returns the ids claimed. */
export async function claimEmails(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    update emails set status = 'processing', updated_at = now()
    where id = any(${ids}) and status in ('scheduled', 'queued') returning id`;
  return rows.map((r) => r.id);
}

/**
 * A scheduled message whose time has come: its recipients become `queued` (the scheduled wait
 * reason cleared) and so does the message, unless it was canceled meanwhile. True when released.
 */
export async function releaseScheduled(sql: Sql, id: string): Promise<boolean> {
  return await sql.begin(async (tx) => {
    const rows = await tx`
      update emails set status = 'queued', updated_at = now() where id = ${id} and status = 'scheduled' returning id`;
    if (rows.length === 0) return false;
    await tx`
      update email_recipients set status = 'queued', wait_reason = null, updated_at = now()
      where email_id = ${id} and status = 'scheduled'`;
    return true;
  });
}

/** Gives a held message back (cancelable again) when none of its recipients was handed over. */
export async function unclaimEmail(db: Db, id: string): Promise<void> {
  await db`
    update emails set status = 'queued', updated_at = now()
    where id = ${id} and status = 'processing'
      and not exists (select 1 from email_recipients r where r.email_id = ${id}
                      and (r.attempts > 0 or r.status in ('sent', 'delivery_delayed', 'delivered', 'bounced')))`;
}

export async function holdRecipients(db: Db, ids: string[], reason: string, until: Date): Promise<void> {
  if (ids.length === 0) return;
  await db`
    update email_recipients set wait_reason = ${reason}, next_attempt_at = ${until}, updated_at = now()
    where id = any(${ids})`;
}

/**
 * Counts recipients against today's caps, atomically (row locks on the two counters), and
 * returns the ids allowed through. A recipient counted once (cap_day set) is never counted again.
 */
export async function reserveCap(
  sql: Sql,
  r: { orgId: string; domainId: string; day: string; ids: string[]; domainCap: number; orgCap: number },
): Promise<string[]> {
  return await sql.begin(async (tx) => {
    const scopes = [`org:${r.orgId}`, `dom:${r.domainId}`];
    await tx`insert into sending_counts (scope, day) select unnest(${scopes}::text[]), ${r.day}::date
             on conflict do nothing`;
    const counts = await tx<{ scope: string; count: number }[]>`
      select scope, count from sending_counts where scope = any(${scopes}) and day = ${r.day}::date
      order by scope for update`;
    const used = (scope: string) => counts.find((c) => c.scope === scope)?.count ?? 0;
    const room = Math.min(r.orgCap - used(scopes[0]!), r.domainCap - used(scopes[1]!));
    const allowed = r.ids.slice(0, Math.max(0, room));
    if (allowed.length === 0) return [];
    await tx`update sending_counts set count = count + ${allowed.length}
             where scope = any(${scopes}) and day = ${r.day}::date`;
    await tx`update email_recipients set cap_day = ${r.day}::date where id = any(${allowed})`;
    return allowed;
  });
}

export async function failEmail(db: Db, emailId: string): Promise<void> {
  await db`update emails set status = 'failed', updated_at = now() where id = ${emailId} and status = 'processing'`;
}

/** 'sent' once no recipient waits to be handed over. */
export async function finishEmail(db: Db, emailId: string): Promise<void> {
  await db`
    update emails set status = 'sent', updated_at = now()
    where id = ${emailId} and status = 'processing'
      and not exists (select 1 from email_recipients where email_id = ${emailId} and status in ('queued', 'scheduled'))`;
}

/**
 * When the message's next waiting recipient (retry or hold) is due, or null when none waits.
 * A retry time that already passed counts too: a job delivering to many recipients can outlive
 * the first one's short back-off, and skipping it would leave that recipient to the sweeper.
 * Recipients with an attempt in flight are another job's business.
 */
export async function nextDue(db: Db, emailId: string): Promise<Date | null> {
  const [row] = await db<{ due: Date | null }[]>`
    select min(next_attempt_at) as due from email_recipients
    where email_id = ${emailId} and status = any(${PENDING}) and next_attempt_at is not null
      and attempt_started_at is null`;
  return row?.due ?? null;
}
