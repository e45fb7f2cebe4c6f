// SQL of the delivery engine: loading a message for delivery, claiming it, per-recipient
// attempt bookkeeping (recorded before and after SMTP), daily caps, the sweeper's look-up and
// the alert-rule counts. Suppressions are shared/db/suppressions.ts.
import { newId } from '../ids.js';
import { eventRows, type EventRow, type NewEvent } from '../events.js';
import type { Db, Sql } from './pool.js';
import type { NewSuppression } from './suppressions.js';

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

export async function getDeliveryEmail(db: Db, id: string): Promise<DeliveryEmail | null> {
  const [row] = await db<DeliveryEmail[]>`
    select e.*, o.sending_paused, o.daily_cap, o.track_opens as org_track_opens,
           o.track_clicks as org_track_clicks, o.alert_rules,
           d.name as domain_name, d.dkim_selector, d.dkim_private_key, d.verified_at as domain_verified_at,
           d.track_opens as domain_track_opens, d.track_clicks as domain_track_clicks,
           exists (select 1 from email_attachments a where a.email_id = e.id) as has_attachments
    from emails e
    join organizations o on o.id = e.org_id
    join domains d on d.id = e.domain_id
    where e.id = ${id}`;
  return row ?? null;
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
  return await db<DeliveryRecipient[]>`
    select r.id, r.email_id, r.field, r.address, r.email, r.domain, r.provider, r.status, r.attempts,
           r.next_attempt_at, r.attempt_started_at, r.attempt_job, r.cap_day::text as cap_day,
           exists (select 1 from suppressions s where s.org_id = r.org_id and s.email = lower(r.email)
                   and (s.domain_id is null or s.domain_id = e.domain_id)) as suppressed
    from email_recipients r join emails e on e.id = r.email_id
    where r.email_id = ${emailId} and r.status = any(${PENDING}) order by r.id`;
}

/** Takes a message from the API's hands; false when it was canceled (or already taken). */
export async function claimEmail(db: Db, id: string): Promise<boolean> {
  const rows = await db`
    update emails set status = 'processing', updated_at = now()
    where id = ${id} and status in ('scheduled', 'queued') returning id`;
  return rows.length === 1;
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

/** Marks recipients handed to delivery (email.sent); returns those that changed. */
export async function markSent(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    update email_recipients set status = 'sent', wait_reason = null, last_event = 'email.sent',
           last_event_at = now(), updated_at = now()
    where id = any(${ids}) and status = 'queued' returning id`;
  return rows.map((r) => r.id);
}

/**
 * Records an attempt BEFORE talking SMTP: attempts + 1 and the in-flight marker. Only recipients
 * not held by another live attempt are taken (a re-run of the same job, or an attempt older than
 * the lease, may take theirs over).
 */
export async function leaseRecipients(
  db: Db,
  ids: string[],
  jobId: string,
  leaseSeconds: number,
): Promise<{ id: string; attempts: number; resumed: boolean }[]> {
  if (ids.length === 0) return [];
  return await db<{ id: string; attempts: number; resumed: boolean }[]>`
    update email_recipients r set attempts = r.attempts + 1, attempt_started_at = now(), attempt_job = ${jobId},
           updated_at = now()
    from (select id, attempt_started_at is not null as resumed from email_recipients where id = any(${ids})) old
    where r.id = old.id and r.status = any(${PENDING})
      and (r.attempt_started_at is null or r.attempt_job = ${jobId}
           or r.attempt_started_at < now() - make_interval(secs => ${leaseSeconds}))
    returning r.id, r.attempts, old.resumed`;
}

export interface OutcomePatch {
  status: RecipientStatus;
  waitReason: string | null;
  nextAttemptAt: Date | null;
  lastResponse: string | null;
  lastEvent: string;
  provider: string | null;
  delivered?: boolean;
  complained?: boolean;
}

/**
 * A recipient's result in ONE statement (atomic without a transaction; one round trip and one
 * commit instead of five statements): the recipient's next state after SMTP (in-flight marker cleared), the
 * message's last event, its events (skipped by dedupe key, as `recordEvents`) and a suppression
 * (as `addSuppression`). Returns the events this call created.
 */
export async function recordOutcome(
  db: Db,
  o: {
    recipientId: string;
    emailId: string;
    patch: OutcomePatch;
    events: NewEvent[];
    suppression: NewSuppression | null;
  },
): Promise<EventRow[]> {
  const { patch: p, suppression: s } = o;
  if (o.events.length === 0) throw new Error('recordOutcome needs at least one event');
  const suppress = s
    ? db`, s as (
        insert into suppressions (id, org_id, email, domain_id, reason, source_email_id)
        values (${newId('sup')}, ${s.orgId}, ${s.email.toLowerCase()}, ${s.domainId}, ${s.reason}, ${s.sourceEmailId})
        on conflict (org_id, email, (coalesce(domain_id, ''))) do nothing returning id)`
    : db``;
  // Data-modifying CTEs run exactly once whether or not the outer statement reads them.
  return await db<EventRow[]>`
    with r as (
      update email_recipients set status = ${p.status}, wait_reason = ${p.waitReason},
             next_attempt_at = ${p.nextAttemptAt}, last_response = coalesce(${p.lastResponse}, last_response),
             last_event = ${p.lastEvent}, last_event_at = now(), provider = coalesce(${p.provider}, provider),
             delivered_at = case when ${p.delivered ?? false} then now() else delivered_at end,
             complained_at = case when ${p.complained ?? false} then now() else complained_at end,
             attempt_started_at = null, attempt_job = null, updated_at = now()
      where id = ${o.recipientId} returning id),
    m as (
      update emails set last_event = ${p.lastEvent}, last_event_at = now(), updated_at = now()
      where id = ${o.emailId} returning id)
    ${suppress}
    insert into events ${db(eventRows(o.events) as never)}
    on conflict (dedupe_key) do nothing
    returning *`;
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
 * `finishEmail`, only when this transaction leased one of `ids` to `jobId` (sent after
 * `leaseRecipients` on the same transaction, so that both go in one round trip).
 */
export async function finishLeasedEmail(db: Db, emailId: string, ids: string[], jobId: string): Promise<void> {
  if (ids.length === 0) return;
  await db`
    update emails set status = 'sent', updated_at = now()
    where id = ${emailId} and status = 'processing'
      and not exists (select 1 from email_recipients where email_id = ${emailId} and status in ('queued', 'scheduled'))
      and exists (select 1 from email_recipients
                  where id = any(${ids}) and attempt_job = ${jobId} and attempt_started_at = now())`;
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
