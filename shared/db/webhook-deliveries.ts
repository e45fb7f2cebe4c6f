// Webhook deliveries and their attempts (DESIGN §7). A delivery's body bytes are written once,
// at fan-out; attempts only ever add rows and move the delivery's counters.
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { unnestRows } from './unnest.js';
import type { Page } from './keys.js';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  org_id: string;
  event_id: string;
  event_type: string;
  body: Buffer;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export interface AttemptRow {
  attempt: number;
  started_at: Date;
  finished_at: Date | null;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  /** The first 1 KiB of the answer body. */
  response_body: string | null;
}

export interface NewDelivery {
  webhookId: string;
  orgId: string;
  eventId: string;
  eventType: string;
  body: Buffer;
}

const FANOUT_COLUMNS = {
  id: 'text',
  webhook_id: 'text',
  org_id: 'text',
  event_id: 'text',
  event_type: 'text',
  body: 'bytea',
  next_attempt_at: 'timestamptz',
} as const;

/**
 * The fan-out of a batch of events in one statement (atomic without a transaction): inserts their
 * deliveries (idempotent on (event, endpoint)), marks the events fanned out, and returns every
 * delivery of those events still waiting for its first attempt, old (a crashed earlier run's)
 * and new alike.
 */
export async function insertFanout(
  db: Db,
  eventIds: string[],
  rows: NewDelivery[],
): Promise<{ id: string; webhook_id: string; event_id: string }[]> {
  const now = new Date();
  const values = rows.map((r) => ({
    id: newId('dlv'),
    webhook_id: r.webhookId,
    org_id: r.orgId,
    event_id: r.eventId,
    event_type: r.eventType,
    body: r.body,
    next_attempt_at: now,
  }));
  const u = values.length > 0 ? unnestRows(db, values, FANOUT_COLUMNS) : null;
  const inserted = u
    ? db`insert into webhook_deliveries (${u.columns}) ${u.select} on conflict (event_id, webhook_id) do nothing
          returning id, webhook_id, event_id`
    : db`select null::text as id, null::text as webhook_id, null::text as event_id where false`;
  // The final select sees the table as it was before this statement: `ins` adds the new rows.
  return await db<{ id: string; webhook_id: string; event_id: string }[]>`
    with ins as (${inserted}),
    marked as (
      update events set webhooks_fanned_at = now() where id = any(${eventIds}) and webhooks_fanned_at is null)
    select id, webhook_id, event_id from ins
    union
    select id, webhook_id, event_id from webhook_deliveries
    where event_id = any(${eventIds}) and status = 'pending' and attempts = 0`;
}

export interface DeliveryWithWebhook extends DeliveryRow {
  url: string;
  webhook_status: 'enabled' | 'disabled';
  signing_secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
}

/** The endpoint of a delivery (for jobs enqueued without it). */
export async function deliveryWebhookId(db: Db, id: string): Promise<string | null> {
  const [row] = await db<{ webhook_id: string }[]>`select webhook_id from webhook_deliveries where id = ${id}`;
  return row?.webhook_id ?? null;
}

export interface ReservedDelivery extends DeliveryWithWebhook {
  /** The attempt number reserved by this call; null when none was (see `reserveAttempt`). */
  reserved: number | null;
}

/**
 * Loads a delivery and, when it is pending, due (within `earlyMs`) and its endpoint enabled,
 * reserves its next attempt (counted before the request goes out, so a killed worker's attempt
 * is counted): one round trip. The row is as it was before the reservation.
 */
export async function reserveAttempt(db: Db, id: string, earlyMs = 1000): Promise<ReservedDelivery | null> {
  const [row] = await db<ReservedDelivery[]>`
    with r as (
      update webhook_deliveries set attempts = attempts + 1, updated_at = now()
      where id = ${id} and status = 'pending'
        and (next_attempt_at is null or next_attempt_at <= now() + make_interval(secs => ${earlyMs / 1000}))
        and exists (select 1 from webhooks w where w.id = webhook_id and w.status = 'enabled')
      returning id, attempts),
    a as (insert into webhook_attempts (delivery_id, attempt) select id, attempts from r returning attempt)
    select d.*, w.url, w.status as webhook_status, w.signing_secret, w.previous_secret, w.previous_secret_expires_at,
      w.failing_since, (select attempt from a) as reserved
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.id = ${id}`;
  return row ?? null;
}

export interface AttemptOutcome {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The first 1 KiB of the answer body (null: no answer). */
  responseBody?: string | null;
  /** The delivery's state after this attempt. */
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
}

export async function finishAttempt(db: Db, id: string, attempt: number, o: AttemptOutcome): Promise<void> {
  await db`
    with a as (
      update webhook_attempts set finished_at = now(), status_code = ${o.statusCode},
        latency_ms = ${o.latencyMs}, error = ${o.error}, response_body = ${o.responseBody ?? null}
      where delivery_id = ${id} and attempt = ${attempt})
    update webhook_deliveries set status = ${o.status}, next_attempt_at = ${o.nextAttemptAt},
      last_status_code = ${o.statusCode}, last_error = ${o.error}, updated_at = now(),
      completed_at = ${o.status === 'pending' ? null : new Date()}
    where id = ${id}`;
}

/** Ends a delivery without an attempt (its endpoint was disabled or deleted). */
export async function abandonDelivery(db: Db, id: string, error: string): Promise<void> {
  await db`
    update webhook_deliveries set status = 'failed', last_error = ${error}, next_attempt_at = null,
      completed_at = now(), updated_at = now()
    where id = ${id} and status = 'pending'`;
}

/** Makes a delivery due now again (manual retry); the body and id stay the same. */
export async function requeueDelivery(db: Db, webhookId: string, id: string): Promise<DeliveryRow | null> {
  const [row] = await db<DeliveryRow[]>`
    update webhook_deliveries set status = 'pending', next_attempt_at = now(), completed_at = null, updated_at = now()
    where webhook_id = ${webhookId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function insertTestDelivery(db: Db, d: NewDelivery): Promise<DeliveryRow> {
  const [row] = await db<DeliveryRow[]>`
    insert into webhook_deliveries (id, webhook_id, org_id, event_id, event_type, body, next_attempt_at)
    values (${newId('dlv')}, ${d.webhookId}, ${d.orgId}, ${d.eventId}, ${d.eventType}, ${d.body}, now())
    returning *`;
  return row!;
}

export interface ListedDelivery extends Omit<DeliveryRow, 'body'> {
  history: AttemptRow[];
}

/** Newest first with each delivery's attempts (oldest first); fetches limit + 1. */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  page: Page & { status?: DeliveryStatus | undefined; eventType?: string | undefined },
): Promise<ListedDelivery[]> {
  const status = page.status ? db`and d.status = ${page.status}` : db``;
  const type = page.eventType ? db`and d.event_type = ${page.eventType}` : db``;
  const cursor = page.before ? db`and d.id > ${page.before}` : page.after ? db`and d.id < ${page.after}` : db``;
  const rows = await db<ListedDelivery[]>`
    select d.id, d.webhook_id, d.org_id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at,
      d.last_status_code, d.last_error, d.created_at, d.updated_at, d.completed_at,
      coalesce((select json_agg(json_build_object(
          'attempt', a.attempt, 'started_at', a.started_at, 'finished_at', a.finished_at,
          'status_code', a.status_code, 'latency_ms', a.latency_ms, 'error', a.error,
          'response_body', a.response_body) order by a.attempt)
        from webhook_attempts a where a.delivery_id = d.id), '[]') as history
    from webhook_deliveries d
    where d.webhook_id = ${webhookId} ${status} ${type} ${cursor}
    order by d.id ${page.before ? db`asc` : db`desc`} limit ${page.limit + 1}`;
  return page.before ? rows.reverse() : rows;
}

/** One delivery of an endpoint with its body and attempts (the console's delivery view). */
export async function getDelivery(
  db: Db,
  webhookId: string,
  id: string,
): Promise<(ListedDelivery & { body: Buffer }) | null> {
  const [row] = await db<(ListedDelivery & { body: Buffer })[]>`
    select d.*,
      coalesce((select json_agg(json_build_object(
          'attempt', a.attempt, 'started_at', a.started_at, 'finished_at', a.finished_at,
          'status_code', a.status_code, 'latency_ms', a.latency_ms, 'error', a.error,
          'response_body', a.response_body) order by a.attempt)
        from webhook_attempts a where a.delivery_id = d.id), '[]') as history
    from webhook_deliveries d where d.webhook_id = ${webhookId} and d.id = ${id}`;
  return row ?? null;
}

/**
 * Makes every failed delivery of an endpoint created in [from, to) due now again (a replay of an
 * outage), at most `limit` of them, oldest first; returns the ones requeued.
 */
export async function requeueFailedDeliveries(
  db: Db,
  webhookId: string,
  range: { from: Date; to: Date },
  limit: number,
): Promise<{ id: string; webhook_id: string }[]> {
  return await db<{ id: string; webhook_id: string }[]>`
    update webhook_deliveries set status = 'pending', next_attempt_at = now(), completed_at = null, updated_at = now()
    where id in (
      select id from webhook_deliveries
      where webhook_id = ${webhookId} and status = 'failed' and created_at >= ${range.from} and created_at < ${range.to}
      order by id limit ${limit})
    returning id, webhook_id`;
}

/** How many failed deliveries of an endpoint were created in [from, to) (what a replay would requeue). */
export async function countFailedDeliveries(
  db: Db,
  webhookId: string,
  range: { from: Date; to: Date },
): Promise<number> {
  const [row] = await db<{ n: string }[]>`
    select count(*) as n from webhook_deliveries
    where webhook_id = ${webhookId} and status = 'failed' and created_at >= ${range.from} and created_at < ${range.to}`;
  return Number(row!.n);
}

/** Pending deliveries due more than `graceMs` ago: candidates for the sweeper. */
export async function dueDeliveries(
  db: Db,
  graceMs: number,
  limit: number,
  /** The last id of the previous page (pages go by id). */
  after = '',
): Promise<{ id: string; webhook_id: string }[]> {
  return await db<{ id: string; webhook_id: string }[]>`
    select id, webhook_id from webhook_deliveries
    where status = 'pending' and next_attempt_at < now() - make_interval(secs => ${graceMs / 1000}) and id > ${after}
    order by id limit ${limit}`;
}

/**
 * Pending deliveries (first attempt or a retry to come) and the age of the oldest, for GET
 * /metrics; index-only on webhook_deliveries_pending_age_idx.
 */
export async function webhookBacklog(db: Db): Promise<{ pending: number; oldestSeconds: number }> {
  const [row] = await db<{ pending: string; oldest: number | null }[]>`
    select count(*) as pending, extract(epoch from now() - min(created_at))::float8 as oldest
    from webhook_deliveries where status = 'pending'`;
  return { pending: Number(row!.pending), oldestSeconds: Math.max(0, row!.oldest ?? 0) };
}
