// SQL of the delivery engine: loading messages for delivery, claiming them, daily caps, holds and
// the sweeper's look-up. Per-recipient attempt bookkeeping (recorded before and after SMTP) is
// shared/db/delivery-attempts.ts; suppressions are shared/db/suppressions.ts.
import type { Stream } from '../streams.js';
import type { Db, Sql } from './pool.js';
import { POOL_OF_EMAIL_SQL } from './ip-pools.js';
import { suppressionReasonSql } from './suppressions.js';

/** The pool a message leaves from (shared/db/ip-pools.ts), as loaded with it. */
export interface DeliveryPool {
  id: string;
  name: string;
  ehlo: string | null;
  /** `warmup_started_at` is an ISO string (the pool is read as JSON). */
  addresses: { address: string; warmup_started_at: string }[];
}

export interface DeliveryEmail {
  id: string;
  org_id: string;
  key_id: string | null;
  domain_id: string;
  mode: 'live' | 'test';
  source: 'api' | 'smtp' | 'broadcast' | 'automation' | 'forward';
  stream: Stream;
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
  /** MAIL FROM of every recipient (a forward's SRS address); null: each recipient's VERP address. */
  envelope_from: string | null;
  status: 'scheduled' | 'queued' | 'processing' | 'sent' | 'canceled' | 'failed';
  scheduled_at: Date | null;
  created_at: Date;
  sending_paused: boolean;
  daily_cap: number | null;
  org_track_opens: boolean;
  org_track_clicks: boolean;
  alert_rules: unknown[];
  domain_name: string;
  /** The demo domain never leaves the machine (shared/domains/demo.ts). */
  domain_demo: boolean;
  dkim_selector: string;
  /** Sealed (shared/secrets.ts); the message renderer opens it. */
  dkim_private_key: string | null;
  domain_verified_at: Date | null;
  /** False for an established domain: its warm-up ramp is skipped (its addresses' ramps still apply). */
  domain_warmup: boolean;
  /** The pool of the most specific assignment (domain, org, stream); null: the host's default address. */
  pool: DeliveryPool | null;
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
  attempt_expires_at: Date | null;
  cap_day: string | null;
  /** On the org's suppression list (org-wide or for the message's domain). */
  suppressed: boolean;
  /** The suppression's reason (hard_bounce, complaint, unsubscribe, manual) when suppressed. */
  suppression_reason: string | null;
}

export const PENDING: RecipientStatus[] = ['queued', 'sent', 'delivery_delayed'];

const DELIVERY_EMAIL_COLUMNS = `
  e.*, o.sending_paused, o.daily_cap, o.track_opens as org_track_opens, o.track_clicks as org_track_clicks,
  o.alert_rules, d.name as domain_name, d.demo as domain_demo, d.dkim_selector, d.dkim_private_key, d.verified_at as domain_verified_at,
  d.warmup as domain_warmup, ${POOL_OF_EMAIL_SQL} as pool,
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
           r.next_attempt_at, r.attempt_started_at, r.attempt_job, r.attempt_expires_at, r.cap_day::text as cap_day,
           s.reason is not null as suppressed, s.reason as suppression_reason
    from email_recipients r join emails e on e.id = r.email_id
    cross join lateral (select ${suppressionReasonSql(db, db`r.org_id`, db`e.domain_id`, db`lower(r.email)`)} as reason) s
    where r.email_id = any(${emailIds}) and r.status = any(${PENDING}) order by r.email_id, r.id`;
}

/** Takes a message from the API's hands; false when it was canceled (or already taken). */
export async function claimEmail(db: Db, id: string): Promise<boolean> {
  const rows = await db`
    update emails set status = 'processing', updated_at = now()
    where id = ${id} and status in ('scheduled', 'queued') returning id`;
  return rows.length === 1;
}

/**
 * `claimEmail` for several messages; returns the ids claimed. The rows are locked in id order, as
 * every statement that changes several queued messages at once does (cancelBroadcast): two such
 * statements then never wait for each other in a circle (a deadlock Postgres would break by
 * failing one of them).
 */
export async function claimEmails(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    update emails e set status = 'processing', updated_at = now()
    from (select id from emails where id = any(${ids}) and status in ('scheduled', 'queued')
          order by id for update) l
    where e.id = l.id returning e.id`;
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
  // A broadcast canceled while the worker held the message (its cancel leaves claimed messages
  // alone) takes it now: canceled, with its recipients, and counted in the broadcast's
  // `count_canceled`, instead of going back to the queue and out later.
  await db`
    with b as (
      select br.broadcast_id as id from broadcast_recipients br
      join broadcasts bc on bc.id = br.broadcast_id and bc.status = 'canceled'
      where br.email_id = ${id} limit 1),
    e as (
      update emails set status = case when exists (select 1 from b) then 'canceled' else 'queued' end,
             updated_at = now()
      where id = ${id} and status = 'processing'
        and not exists (select 1 from email_recipients r where r.email_id = ${id}
                        and (r.attempts > 0 or r.status in ('sent', 'delivery_delayed', 'delivered', 'bounced')))
      returning status),
    r as (
      update email_recipients set status = 'canceled', wait_reason = null, next_attempt_at = null, updated_at = now()
      where email_id = ${id} and status in ('scheduled', 'queued')
        and exists (select 1 from e where e.status = 'canceled')
      returning id)
    update broadcasts set count_canceled = count_canceled + 1, updated_at = now()
    where id = (select id from b) and exists (select 1 from e where e.status = 'canceled')`;
}

export async function holdRecipients(db: Db, ids: string[], reason: string, until: Date): Promise<void> {
  if (ids.length === 0) return;
  await db`
    update email_recipients set wait_reason = ${reason}, next_attempt_at = ${until}, updated_at = now()
    where id = any(${ids})`;
}

export interface CapAddress {
  address: string;
  /** Today's warm-up cap of the address (Infinity once warmed up). */
  cap: number;
}

/**
 * Counts recipients against today's caps, atomically (row locks on the counters), and returns
 * the ids allowed through, each with the pool address it was counted on (null without a pool).
 * The organization's and domain's caps hold for the message; a pool's addresses share the rest,
 * each within its own warm-up cap. A recipient counted once (cap_day set) is
 * never counted again.
 */
export async function reserveCap(
  sql: Sql,
  r: {
    orgId: string;
    domainId: string;
    day: string;
    ids: string[];
    domainCap: number;
    orgCap: number;
    addresses: CapAddress[];
  },
): Promise<Map<string, string | null>> {
  return await sql.begin(async (tx) => {
    const limited = r.addresses.filter((a) => a.cap !== Infinity);
    const scopes = [`org:${r.orgId}`, `dom:${r.domainId}`, ...limited.map((a) => `ip:${a.address}`)];
    await tx`insert into sending_counts (scope, day) select unnest(${scopes}::text[]), ${r.day}::date
             on conflict do nothing`;
    const counts = await tx<{ scope: string; count: number }[]>`
      select scope, count from sending_counts where scope = any(${scopes}) and day = ${r.day}::date
      order by scope for update`;
    const used = (scope: string) => counts.find((c) => c.scope === scope)?.count ?? 0;
    const rooms = r.addresses.map((a) => ({ address: a.address, room: a.cap - used(`ip:${a.address}`), taken: 0 }));
    let room = Math.min(r.orgCap - used(scopes[0]!), r.domainCap - used(scopes[1]!));
    if (rooms.length > 0)
      room = Math.min(
        room,
        rooms.reduce((n, a) => n + Math.max(0, a.room), 0),
      );
    const allowed = r.ids.slice(0, Math.max(0, room));
    if (allowed.length === 0) return new Map();
    // Addresses still warming up use their day's allowance first (the roomiest first), so that they
    // do warm up; warmed-up addresses share the rest evenly.
    const pick = () => {
      const warming = rooms.filter((a) => a.room > 0 && a.room !== Infinity);
      if (warming.length > 0) return warming.reduce((b, a) => (a.room > b.room ? a : b));
      const open = rooms.filter((a) => a.room === Infinity);
      return open.length > 0 ? open.reduce((b, a) => (a.taken < b.taken ? a : b)) : null;
    };
    const placed = new Map<string, string | null>();
    for (const id of allowed) {
      const best = pick();
      if (best) {
        best.room--;
        best.taken++;
      }
      placed.set(id, best?.address ?? null);
    }
    await tx`update sending_counts set count = count + ${allowed.length}
             where scope = any(${scopes.slice(0, 2)}) and day = ${r.day}::date`;
    const ipScopes = rooms.filter((a) => a.taken > 0 && limited.some((l) => l.address === a.address));
    if (ipScopes.length > 0) {
      await tx`update sending_counts c set count = c.count + u.n
               from unnest(${ipScopes.map((a) => `ip:${a.address}`)}::text[], ${ipScopes.map((a) => a.taken)}::int[]) as u(scope, n)
               where c.scope = u.scope and c.day = ${r.day}::date`;
    }
    await tx`update email_recipients set cap_day = ${r.day}::date where id = any(${allowed})`;
    return placed;
  });
}

/**
 * The email-level end states (docs/api/emails.md): once no recipient can move any more (none
 * scheduled, queued, sent or delayed), a message still `queued` or `processing` becomes `sent`
 * when at least one recipient was handed to delivery, else `failed` (every recipient was
 * rejected or failed before hand-over: all suppressed, say). Returns the ids settled. Rows are
 * locked in id order, as claims and cancels lock theirs (claimEmails).
 */
export async function settleEmails(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    update emails e set status = case when exists (
             select 1 from email_recipients r where r.email_id = e.id
               and (r.attempts > 0 or r.status in ('delivered', 'bounced'))) then 'sent' else 'failed' end,
           updated_at = now()
    from (select id from emails where id = any(${ids}) and status in ('queued', 'processing')
          order by id for update) l
    where e.id = l.id and e.status in ('queued', 'processing')
      and exists (select 1 from email_recipients r where r.email_id = e.id)
      and not exists (select 1 from email_recipients r where r.email_id = e.id
                      and r.status in ('scheduled', 'queued', 'sent', 'delivery_delayed'))
    returning e.id`;
  return rows.map((r) => r.id);
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
 * A recipient with an attempt in flight is due when its lease expires: its holder normally
 * records a result before then (and the look then finds nothing to do); if the holder died,
 * that look takes the attempt over seconds later instead of waiting for the sweeper.
 */
export async function nextDue(db: Db, emailId: string): Promise<Date | null> {
  const [row] = await db<{ due: Date | null }[]>`
    select min(case when attempt_started_at is null then next_attempt_at
                    else coalesce(attempt_expires_at, attempt_started_at) end) as due
    from email_recipients
    where email_id = ${emailId} and status = any(${PENDING})
      and (next_attempt_at is not null or attempt_started_at is not null)`;
  return row?.due ?? null;
}
