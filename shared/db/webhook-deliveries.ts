// Webhook deliveries and their attempts (DESIGN §7). A delivery's body bytes are written once,
// at fan-out; attempts only ever add rows and move the delivery's counters.
import { newId } from '../ids.js';
import type { Db } from './pool.js';
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
}

export interface NewDelivery {
  webhookId: string;
  orgId: string;
  eventId: string;
  eventType: string;
  body: Buffer;
}

/**
 * Creates the deliveries of one event (idempotent on (event, endpoint)) and returns every
 * delivery of that event still waiting for its first attempt, so that a re-run of the fan-out
 * after a crash between insert and enqueue enqueues what the first run could not.
 */
export async function insertDeliveries(db: Db, eventId: string, rows: NewDelivery[]): Promise<{ id: string }[]> {
  if (rows.length > 0) {
    const values = rows.map((r) => ({
      id: newId('dlv'),
      webhook_id: r.webhookId,
      org_id: r.orgId,
      event_id: r.eventId,
      event_type: r.eventType,
      body: r.body,
      next_attempt_at: new Date(),
    }));
    await db`insert into webhook_deliveries ${db(values as never)} on conflict (event_id, webhook_id) do nothing`;
  }
  return await db<{ id: string }[]>`
    select id from webhook_deliveries where event_id = ${eventId} and status = 'pending' and attempts = 0`;
}

export interface DeliveryWithWebhook extends DeliveryRow {
  url: string;
  webhook_status: 'enabled' | 'disabled';
  signing_secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
}

export async function loadDelivery(db: Db, id: string): Promise<DeliveryWithWebhook | null> {
  const [row] = await db<DeliveryWithWebhook[]>`
    select d.*, w.url, w.status as webhook_status, w.signing_secret, w.previous_secret, w.previous_secret_expires_at,
      w.failing_since
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.id = ${id}`;
  return row ?? null;
}

/** Reserves the next attempt number before the request goes out, so a killed worker's attempt is counted. */
export async function beginAttempt(db: Db, id: string): Promise<number> {
  const [row] = await db<{ attempt: number }[]>`
    with d as (
      update webhook_deliveries set attempts = attempts + 1, updated_at = now()
      where id = ${id} returning id, attempts)
    insert into webhook_attempts (delivery_id, attempt) select id, attempts from d
    returning attempt`;
  return row!.attempt;
}

export interface AttemptOutcome {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The delivery's state after this attempt. */
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
}

export async function finishAttempt(db: Db, id: string, attempt: number, o: AttemptOutcome): Promise<void> {
  await db`
    with a as (
      update webhook_attempts set finished_at = now(), status_code = ${o.statusCode},
        latency_ms = ${o.latencyMs}, error = ${o.error}
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
  page: Page & { status?: DeliveryStatus | undefined },
): Promise<ListedDelivery[]> {
  const status = page.status ? db`and d.status = ${page.status}` : db``;
  const cursor = page.before ? db`and d.id > ${page.before}` : page.after ? db`and d.id < ${page.after}` : db``;
  const rows = await db<ListedDelivery[]>`
    select d.id, d.webhook_id, d.org_id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at,
      d.last_status_code, d.last_error, d.created_at, d.updated_at, d.completed_at,
      coalesce((select json_agg(json_build_object(
          'attempt', a.attempt, 'started_at', a.started_at, 'finished_at', a.finished_at,
          'status_code', a.status_code, 'latency_ms', a.latency_ms, 'error', a.error) order by a.attempt)
        from webhook_attempts a where a.delivery_id = d.id), '[]') as history
    from webhook_deliveries d
    where d.webhook_id = ${webhookId} ${status} ${cursor}
    order by d.id ${page.before ? db`asc` : db`desc`} limit ${page.limit + 1}`;
  return page.before ? rows.reverse() : rows;
}

export async function getDeliveryBody(db: Db, id: string): Promise<Buffer | null> {
  const [row] = await db<{ body: Buffer }[]>`select body from webhook_deliveries where id = ${id}`;
  return row?.body ?? null;
}

/** Pending deliveries due more than `graceMs` ago: candidates for the sweeper. */
export async function dueDeliveries(db: Db, graceMs: number, limit: number): Promise<{ id: string }[]> {
  return await db<{ id: string }[]>`
    select id from webhook_deliveries
    where status = 'pending' and next_attempt_at < now() - make_interval(secs => ${graceMs / 1000})
    order by next_attempt_at limit ${limit}`;
}
