// Broadcasts (DESIGN §5): drafts, their state changes, and the batch steps of a send. Every read
// through the API is scoped like emails: the key's org, its mode and, when restricted, its
// domains. The batch functions run inside the worker's transaction that holds the broadcast row.
import type { Mode } from '../keys.js';
import type { SegmentFilter } from '../segment-filter.js';
import { pagedRows, type PropertyValue } from './contacts.js';
import type { EmailScope, Page } from './emails.js';
import type { Db } from './pool.js';
import { unnestRows, type ColumnSpec } from './unnest.js';
import { filterCondition, membershipCondition } from './segments.js';
import { suppressionReasonSql } from './suppressions.js';
import { jsonParam, rowParam } from './params.js';

export type BroadcastStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'canceled';
export type RecipientOutcome = 'sent' | 'skipped_unsubscribed' | 'skipped_suppressed' | 'skipped_topic' | 'failed';

export interface BroadcastContent {
  name: string | null;
  domain_id: string;
  from_address: string;
  subject: string | null;
  reply_to: string[];
  preview_text: string | null;
  html: string | null;
  text: string | null;
  template_id: string | null;
  template_version: number | null;
  segment_id: string | null;
  topic_id: string | null;
  kind: string | null;
}

export interface BroadcastRow extends BroadcastContent {
  id: string;
  org_id: string;
  key_id: string | null;
  mode: Mode;
  status: BroadcastStatus;
  scheduled_at: Date | null;
  started_at: Date | null;
  sent_at: Date | null;
  canceled_at: Date | null;
  segment_filter: SegmentFilter | null;
  cursor: string | null;
  count_recipients: number;
  count_sent: number;
  count_skipped_unsubscribed: number;
  count_skipped_suppressed: number;
  count_skipped_topic: number;
  count_failed: number;
  count_canceled: number;
  created_at: Date;
  updated_at: Date;
}

function scoped(db: Db, s: EmailScope) {
  return db`b.org_id = ${s.orgId} and b.mode = ${s.mode}
    ${s.domainIds.length > 0 ? db`and b.domain_id = any(${s.domainIds})` : db``}`;
}

/** Idempotent on the id: running it again after a first run that was applied returns that row. */
export async function insertBroadcast(
  db: Db,
  b: BroadcastContent & { id: string; org_id: string; key_id: string; mode: Mode; scheduled_at: Date | null },
): Promise<BroadcastRow> {
  const [row] = await db<BroadcastRow[]>`
    with ins as (insert into broadcasts ${rowParam(db, b)} on conflict (id) do nothing returning *)
    select * from ins union all select * from broadcasts where id = ${b.id} and not exists (select 1 from ins)`;
  return row!;
}

/** Whether the organization has any broadcast of `mode` (the console's default list). */
export async function hasBroadcasts(db: Db, orgId: string, mode: 'live' | 'test'): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`
    select exists (select 1 from broadcasts where org_id = ${orgId} and mode = ${mode}) as any`;
  return row!.any;
}

export async function getBroadcast(db: Db, s: EmailScope, id: string): Promise<BroadcastRow | null> {
  const [row] = await db<BroadcastRow[]>`select b.* from broadcasts b where b.id = ${id} and ${scoped(db, s)}`;
  return row ?? null;
}

/** Newest first; fetches limit + 1 rows. */
export async function listBroadcasts(
  db: Db,
  s: EmailScope,
  status: BroadcastStatus | undefined,
  page: Page,
): Promise<BroadcastRow[]> {
  return await pagedRows<BroadcastRow>(
    db,
    page,
    (cursor, order, limit) => db<BroadcastRow[]>`
      select * from broadcasts b
      where ${scoped(db, s)} ${status ? db`and b.status = ${status}` : db``} ${cursor}
      ${order} limit ${limit}`,
  );
}

/** Replaces the content of a draft; null when it is not (or no longer) a draft. */
export async function updateDraft(
  db: Db,
  s: EmailScope,
  id: string,
  c: BroadcastContent & { scheduled_at: Date | null },
): Promise<BroadcastRow | null> {
  const [row] = await db<BroadcastRow[]>`
    update broadcasts b set ${rowParam(db, c)}, updated_at = now()
    where b.id = ${id} and b.status = 'draft' and ${scoped(db, s)}
    returning b.*`;
  return row ?? null;
}

export async function deleteDraft(db: Db, s: EmailScope, id: string): Promise<BroadcastRow | null> {
  const [row] = await db<BroadcastRow[]>`
    delete from broadcasts b where b.id = ${id} and b.status = 'draft' and ${scoped(db, s)} returning b.*`;
  return row ?? null;
}

/** Draft → scheduled (at a future time) or sending (now); null when it is not a draft. */
export async function startSend(db: Db, s: EmailScope, id: string, at: Date | null): Promise<BroadcastRow | null> {
  const [row] = await db<BroadcastRow[]>`
    update broadcasts b set
      status = ${at ? 'scheduled' : 'sending'},
      scheduled_at = ${at},
      started_at = ${at ? null : db`now()`},
      updated_at = now()
    where b.id = ${id} and b.status = 'draft' and ${scoped(db, s)}
    returning b.*`;
  return row ?? null;
}

/**
 * Scheduled or sending → canceled, and the broadcast's messages not yet handed to delivery are
 * canceled with it (the delivery worker claims a message with the same kind of conditional
 * update, so each message is either delivered or canceled). The messages are locked in id order,
 * as the delivery worker's claims lock theirs, so a cancel and a claim never deadlock. Null when
 * the broadcast is in another state.
 */
export async function cancelBroadcast(db: Db, s: EmailScope, id: string): Promise<BroadcastRow | null> {
  const [row] = await db<BroadcastRow[]>`
    update broadcasts b set status = 'canceled', canceled_at = now(), updated_at = now()
    where b.id = ${id} and b.status in ('scheduled', 'sending') and ${scoped(db, s)}
    returning b.*`;
  if (!row) return null;
  const ids = db`select email_id from broadcast_recipients where broadcast_id = ${id} and email_id is not null`;
  // Only the recipients of the messages this cancel took from delivery (a message a worker had
  // claimed is the worker's), locked in id order like the hand-over's.
  const [taken] = await db<{ n: number }[]>`
    with canceled as (
      update emails e set status = 'canceled', updated_at = now()
      from (select id from emails where id in (${ids}) and status in ('scheduled', 'queued')
            order by id for update) l
      where e.id = l.id returning e.id),
    locked as (
      select r.id from email_recipients r join canceled c on c.id = r.email_id
      where r.status in ('scheduled', 'queued') order by r.id for update of r),
    recipients as (
      update email_recipients r set status = 'canceled', wait_reason = null, updated_at = now()
      from locked where r.id = locked.id returning r.id)
    select (select count(*)::int from canceled) as n`;
  if (!taken || taken.n === 0) return row;
  const [counted] = await db<BroadcastRow[]>`
    update broadcasts set count_canceled = count_canceled + ${taken.n} where id = ${id} returning *`;
  return counted ?? row;
}

// ---- the batch steps (worker side) ----

/** The broadcast row, locked for this transaction: batches of one broadcast run one at a time. */
export async function lockBroadcast(db: Db, id: string): Promise<(BroadcastRow & { domain_name: string }) | null> {
  const [row] = await db<(BroadcastRow & { domain_name: string })[]>`
    select b.*, d.name as domain_name from broadcasts b join domains d on d.id = b.domain_id
    where b.id = ${id} for update of b`;
  return row ?? null;
}

/** Ends a send that cannot go on (its segment was deleted before it started). */
export async function abandonBroadcast(db: Db, id: string): Promise<void> {
  await db`update broadcasts set status = 'canceled', canceled_at = now(), updated_at = now() where id = ${id}`;
}

/** Scheduled → sending, fixing the segment definition and template version for every batch. */
export async function beginSending(
  db: Db,
  id: string,
  f: { filter: SegmentFilter; templateVersion: number | null },
): Promise<BroadcastRow> {
  const [row] = await db<BroadcastRow[]>`
    update broadcasts set
      status = 'sending',
      started_at = coalesce(started_at, now()),
      segment_filter = ${jsonParam(db, f.filter)}::jsonb,
      template_version = ${f.templateVersion},
      updated_at = now()
    where id = ${id}
    returning *`;
  return row!;
}

export interface BatchContact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, PropertyValue>;
  unsubscribed: boolean;
  /** The contact's effective choice for the broadcast's topic (null without a topic). */
  topic_subscription: 'opt_in' | 'opt_out' | null;
  /** Suppressed for the sending domain or org-wide. */
  suppressed: boolean;
}

/** The next page of the segment's contacts after `cursor`, in id order (keyset pagination). */
export async function segmentPage(
  db: Db,
  b: Pick<BroadcastRow, 'org_id' | 'domain_id' | 'topic_id' | 'cursor' | 'segment_id'> & { filter: SegmentFilter },
  limit: number,
): Promise<BatchContact[]> {
  const topic = b.topic_id
    ? db`coalesce(
        (select ct.subscription from contact_topics ct where ct.contact_id = c.id and ct.topic_id = ${b.topic_id}),
        (select t.default_subscription from topics t where t.id = ${b.topic_id}))`
    : db`null::text`;
  return await db<BatchContact[]>`
    select c.id, c.email, c.first_name, c.last_name, c.properties, c.unsubscribed,
           ${topic} as topic_subscription,
           ${suppressionReasonSql(db, db`c.org_id`, db`${b.domain_id}::text`, db`c.email`)} is not null as suppressed
    from contacts c
    where c.org_id = ${b.org_id}
      and ${b.segment_id ? membershipCondition(db, b.org_id, b.segment_id, b.filter) : filterCondition(db, b.org_id, b.filter)}
      ${b.cursor ? db`and c.id > ${b.cursor}` : db``}
    order by c.id asc
    limit ${limit}`;
}

export interface NewBroadcastRecipient {
  contact_id: string;
  email_id: string | null;
  outcome: RecipientOutcome;
  detail: string | null;
}

const CLAIM_COLUMNS: ColumnSpec<NewBroadcastRecipient & { broadcast_id: string }> = {
  broadcast_id: 'text',
  contact_id: 'text',
  email_id: 'text',
  outcome: 'text',
  detail: 'text',
};

/**
 * Claims the contacts for this broadcast; returns the contact ids claimed now. A contact that
 * already has a row (a batch that ran before) is left out, so its message is never built twice.
 */
export async function claimRecipients(db: Db, broadcastId: string, rows: NewBroadcastRecipient[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const u = unnestRows(
    db,
    rows.map((r) => ({ broadcast_id: broadcastId, ...r })),
    CLAIM_COLUMNS,
  );
  const claimed = await db<{ contact_id: string }[]>`
    insert into broadcast_recipients (${u.columns}) ${u.select}
    on conflict (broadcast_id, contact_id) do nothing
    returning contact_id`;
  return claimed.map((r) => r.contact_id);
}

export type Counts = Record<RecipientOutcome, number>;

/** Adds a batch's outcomes to the counters and moves the cursor; `done` marks the send finished. */
export async function recordBatch(
  db: Db,
  id: string,
  p: { counts: Counts; cursor: string | null; done: boolean },
): Promise<void> {
  const c = p.counts;
  const total = c.sent + c.skipped_unsubscribed + c.skipped_suppressed + c.skipped_topic + c.failed;
  await db`
    update broadcasts set
      count_recipients = count_recipients + ${total},
      count_sent = count_sent + ${c.sent},
      count_skipped_unsubscribed = count_skipped_unsubscribed + ${c.skipped_unsubscribed},
      count_skipped_suppressed = count_skipped_suppressed + ${c.skipped_suppressed},
      count_skipped_topic = count_skipped_topic + ${c.skipped_topic},
      count_failed = count_failed + ${c.failed},
      cursor = coalesce(${p.cursor}, cursor),
      status = ${p.done ? 'sent' : db`status`},
      sent_at = ${p.done ? db`now()` : db`sent_at`},
      updated_at = now()
    where id = ${id}`;
}

/** Broadcasts whose next job may have been lost: due scheduled ones and idle sending ones. */
export async function findStalledBroadcasts(db: Db, graceSeconds: number, limit: number) {
  return await db<Pick<BroadcastRow, 'id' | 'cursor' | 'status'>[]>`
    select id, cursor, status from broadcasts
    where ((status = 'scheduled' and scheduled_at <= now() - make_interval(secs => ${graceSeconds}))
           or status = 'sending')
      and updated_at <= now() - make_interval(secs => ${graceSeconds})
    order by updated_at limit ${limit}`;
}

/** A batch held back by a full delivery queue: the send is alive (the sweeper leaves it alone). */
export async function touchBroadcast(db: Db, id: string): Promise<void> {
  await db`update broadcasts set updated_at = now() where id = ${id}`;
}

/**
 * For one-click unsubscribe: the contact a broadcast message went to and the broadcast's topic.
 * Null when the message is not a broadcast's.
 */
export async function broadcastOfEmail(
  db: Db,
  emailId: string,
): Promise<{ contact_id: string; topic_id: string | null } | null> {
  const [row] = await db<{ contact_id: string; topic_id: string | null }[]>`
    select r.contact_id, b.topic_id from broadcast_recipients r
    join broadcasts b on b.id = r.broadcast_id
    join contacts c on c.id = r.contact_id
    where r.email_id = ${emailId}`;
  return row ?? null;
}

export interface BroadcastProgress {
  queued: number;
  sent: number;
  delivered: number;
  bounced: number;
  opened: number;
}

/** Where a broadcast's messages are now (the console's progress, refreshed while it sends). */
export async function broadcastProgress(db: Db, broadcastId: string): Promise<BroadcastProgress> {
  const [row] = await db<Record<keyof BroadcastProgress, string>[]>`
    select
      count(*) filter (where r.status in ('scheduled', 'queued')) as queued,
      count(*) filter (where r.status in ('sent', 'delivery_delayed', 'delivered', 'bounced')) as sent,
      count(*) filter (where r.delivered_at is not null) as delivered,
      count(*) filter (where r.status = 'bounced') as bounced,
      count(*) filter (where r.opened_at is not null) as opened
    from broadcast_recipients br join email_recipients r on r.email_id = br.email_id
    where br.broadcast_id = ${broadcastId}`;
  return {
    queued: Number(row!.queued),
    sent: Number(row!.sent),
    delivered: Number(row!.delivered),
    bounced: Number(row!.bounced),
    opened: Number(row!.opened),
  };
}
