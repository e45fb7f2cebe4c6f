// The retention purge's statements (DESIGN §15; workers/retention.ts). Each handles one small
// batch of one organization's oldest expired rows (SKIP LOCKED: two workers never fight over a
// row) and returns how many it handled, so the caller loops while batches come back full.
// Content is purged only from messages in a terminal state: the message settled (sent, canceled,
// failed) and no recipient still waits for an attempt or its outcome. Events are deleted only
// once counted into the metrics rollups (which are kept) and fanned out to webhooks; webhook
// deliveries only once they ended (their attempts go with them).
import type { Db } from './pool.js';

export interface RetentionOrg {
  id: string;
  content_days: number;
  events_days: number;
  request_log_days: number;
}

export async function listRetentionOrgs(db: Db): Promise<RetentionOrg[]> {
  return await db<RetentionOrg[]>`
    select id, retention_content_days as content_days, retention_events_days as events_days,
           retention_request_log_days as request_log_days
    from organizations order by id`;
}

const cutoff = (db: Db, days: number) => db`now() - make_interval(days => ${days})`;

/** Empties the bodies, raw MIME, stored raw messages and attachments of expired messages. */
export async function purgeEmailContent(db: Db, orgId: string, days: number, limit: number): Promise<number> {
  const rows = await db`
    with batch as (
      select e.id from emails e
      where e.org_id = ${orgId} and e.created_at < ${cutoff(db, days)} and e.content_purged_at is null
        and e.status in ('sent', 'canceled', 'failed')
        and not exists (select 1 from email_recipients r where r.email_id = e.id
          and r.status in ('scheduled', 'queued', 'sent', 'delivery_delayed'))
      order by e.created_at limit ${limit}
      for update of e skip locked),
    attachments as (delete from email_attachments a using batch where a.email_id = batch.id),
    raw as (delete from email_raw_messages m using batch where m.email_id = batch.id)
    update emails e set html = null, text = null, raw_mime = null, content_purged_at = now()
    from batch where e.id = batch.id
    returning e.id`;
  return rows.length;
}

/** Empties the raw message, bodies and attachments of expired, processed inbound messages (DMARC reports' too). */
export async function purgeInboundContent(db: Db, orgId: string, days: number, limit: number): Promise<number> {
  const rows = await db`
    with batch as (
      select i.id from inbound_messages i
      where i.org_id = ${orgId} and i.created_at < ${cutoff(db, days)} and i.content_purged_at is null
        and i.status <> 'stored'
      order by i.created_at limit ${limit}
      for update skip locked),
    attachments as (delete from inbound_attachments a using batch where a.inbound_id = batch.id)
    update inbound_messages i set raw = ''::bytea, text = null, html = null, stripped_text = null,
      headers = '[]'::jsonb, content_purged_at = now()
    from batch where i.id = batch.id
    returning i.id`;
  return rows.length;
}

/** Deletes expired events already counted into the rollups and fanned out. */
export async function purgeEvents(db: Db, orgId: string, days: number, limit: number): Promise<number> {
  const rows = await db`
    with batch as (
      select id from events
      where org_id = ${orgId} and created_at < ${cutoff(db, days)}
        and metrics_counted_at is not null and webhooks_fanned_at is not null
      order by created_at limit ${limit}
      for update skip locked)
    delete from events e using batch where e.id = batch.id
    returning e.id`;
  return rows.length;
}

/** Deletes expired webhook deliveries that ended, with their attempts. */
export async function purgeWebhookDeliveries(db: Db, orgId: string, days: number, limit: number): Promise<number> {
  const rows = await db`
    with batch as (
      select id from webhook_deliveries
      where org_id = ${orgId} and created_at < ${cutoff(db, days)} and status <> 'pending'
      order by created_at limit ${limit}
      for update skip locked)
    delete from webhook_deliveries d using batch where d.id = batch.id
    returning d.id`;
  return rows.length;
}

/** Deletes expired request log lines (GET /logs). */
export async function purgeRequestLogs(db: Db, orgId: string, days: number, limit: number): Promise<number> {
  const rows = await db`
    with batch as (
      select id from request_logs
      where org_id = ${orgId} and created_at < ${cutoff(db, days)}
      order by created_at limit ${limit}
      for update skip locked)
    delete from request_logs l using batch where l.id = batch.id
    returning l.id`;
  return rows.length;
}
