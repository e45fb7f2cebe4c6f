// SQL of a delivery attempt, set-based so that one statement serves the same step of many
// concurrent jobs: hand-over (email.sent marks, the attempt lease recorded BEFORE SMTP, the
// message 'sent' once leased) and outcomes (each recipient's result AFTER SMTP, its events, the
// message's last event, suppressions). Rows travel as one jsonb parameter: the statement text is
// the same for any number of rows, so it is prepared once.
import { newId } from '../ids.js';
import type { EventRow, NewEvent } from '../events.js';
import { eventRows } from './events.js';
import type { Db } from './pool.js';
import type { TlsFacts } from '../mail/outbound/types.js';
import type { NewSuppression } from './suppressions.js';
import { PENDING, type RecipientStatus } from './delivery.js';
import { jsonParam } from './params.js';

/** Marks recipients handed to delivery (email.sent); returns those that changed. */
export async function markSent(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    update email_recipients set status = 'sent', wait_reason = null, last_event = 'email.sent',
           last_event_at = now(), updated_at = now()
    where id = any(${ids}) and status = 'queued' returning id`;
  return rows.map((r) => r.id);
}

export interface Lease {
  id: string;
  attempts: number;
  /** An earlier attempt was in flight without a result (its holder died or lost Postgres). */
  resumed: boolean;
  /** That attempt's holder token, when resumed. */
  previous: string | null;
}

/**
 * Records attempts BEFORE talking SMTP: attempts + 1 and the in-flight marker (the lease holder,
 * one token per run of a job, and the lease's expiry). Only recipients not held by another live
 * lease are taken: the holder itself (a run retried after an outage) may take its own back, and
 * anyone may take over a lease that expired (its holder died and stopped renewing it).
 */
export async function leaseRecipients(
  db: Db,
  /** A recipient at most once. */
  wanted: { id: string; jobId: string }[],
  leaseSeconds: number,
): Promise<Lease[]> {
  if (wanted.length === 0) return [];
  return await db<Lease[]>`
    update email_recipients r set attempts = r.attempts + 1, attempt_started_at = now(), attempt_job = old.job_id,
           attempt_expires_at = now() + make_interval(secs => ${leaseSeconds}), updated_at = now()
    from (select o.id, w.job_id, o.attempt_started_at is not null as resumed, o.attempt_job as previous
          from jsonb_to_recordset(${jsonParam(
            db,
            wanted.map((w) => ({ id: w.id, job_id: w.jobId })),
          )}::jsonb)
                 as w(id text, job_id text)
          join email_recipients o on o.id = w.id) old
    where r.id = old.id and r.status = any(${PENDING})
      and (r.attempt_started_at is null or r.attempt_job = old.job_id
           or coalesce(r.attempt_expires_at, r.attempt_started_at) < now())
    returning r.id, r.attempts, old.resumed, old.previous`;
}

/**
 * Gives back attempts a stopping run leased but never started (no SMTP command was sent for
 * them): the attempt is not counted, the in-flight marker goes, and the recipient is due at once,
 * for another process to send; returns how many.
 */
export async function releaseAttempts(db: Db, ids: string[], holder: string): Promise<number> {
  if (ids.length === 0) return 0;
  const rows = await db`
    update email_recipients set attempts = attempts - 1, attempt_started_at = null, attempt_job = null,
           attempt_expires_at = null, next_attempt_at = now(), updated_at = now()
    where id = any(${ids}) and attempt_job = ${holder} and attempt_started_at is not null
      and status = any(${PENDING})
    returning id`;
  return rows.length;
}

/** Extends the leases of the attempts the given holders have in flight; returns how many. */
export async function renewLeases(db: Db, holders: string[], leaseSeconds: number): Promise<number> {
  if (holders.length === 0) return 0;
  const rows = await db`
    update email_recipients set attempt_expires_at = now() + make_interval(secs => ${leaseSeconds})
    where attempt_started_at is not null and attempt_job = any(${holders}) returning id`;
  return rows.length;
}

/**
 * A message becomes 'sent' once no recipient waits to be handed over, when this transaction
 * leased one of its recipients to the job (sent after `leaseRecipients` on the same
 * transaction, so that both go in one round trip).
 */
export async function finishLeasedEmails(db: Db, leased: { emailId: string; jobId: string }[]): Promise<void> {
  if (leased.length === 0) return;
  await db`
    update emails e set status = 'sent', updated_at = now()
    from jsonb_to_recordset(${jsonParam(
      db,
      leased.map((l) => ({ id: l.emailId, job_id: l.jobId })),
    )}::jsonb)
           as l(id text, job_id text)
    where e.id = l.id and e.status = 'processing'
      and not exists (select 1 from email_recipients where email_id = e.id and status in ('queued', 'scheduled'))
      and exists (select 1 from email_recipients r
                  where r.email_id = e.id and r.attempt_job = l.job_id and r.attempt_started_at = now())`;
}

export interface OutcomePatch {
  status: RecipientStatus;
  waitReason: string | null;
  nextAttemptAt: Date | null;
  lastResponse: string | null;
  lastEvent: string;
  provider: string | null;
  /** The attempt's TLS, when it was an SMTP attempt (kept: a simulated one leaves the last). */
  tls?: TlsFacts | null;
  delivered?: boolean;
  complained?: boolean;
}

export interface Outcome {
  recipientId: string;
  emailId: string;
  patch: OutcomePatch;
  /** At least one. */
  events: NewEvent[];
  suppression: NewSuppression | null;
}

/**
 * Recipients' results in ONE statement (atomic without a transaction): each recipient's next
 * state after SMTP (in-flight marker cleared), its message's last event (the last outcome of a
 * message wins, as if they were recorded in turn), the events (skipped by dedupe key, as
 * `recordEvents`) and suppressions (as `addSuppression`). A recipient may appear once. Returns,
 * per outcome, the events this call created.
 */
export async function recordOutcomes(db: Db, outcomes: Outcome[]): Promise<EventRow[][]> {
  if (outcomes.length === 0) return [];
  const recipients = outcomes.map(({ recipientId: id, patch: p }) => ({
    id,
    status: p.status,
    wait_reason: p.waitReason,
    next_attempt_at: p.nextAttemptAt,
    last_response: p.lastResponse,
    last_event: p.lastEvent,
    provider: p.provider,
    tls: p.tls ?? null,
    delivered: p.delivered ?? false,
    complained: p.complained ?? false,
  }));
  const lastEvents = new Map(outcomes.map((o) => [o.emailId, o.patch.lastEvent]));
  const emails = [...lastEvents].map(([id, last_event]) => ({ id, last_event }));
  const suppressions = outcomes.flatMap(({ suppression: s }) =>
    s
      ? [
          {
            id: newId('sup'),
            org_id: s.orgId,
            email: s.email.toLowerCase(),
            domain_id: s.domainId,
            reason: s.reason,
            source_email_id: s.sourceEmailId,
          },
        ]
      : [],
  );
  // Data-modifying CTEs run exactly once whether or not the outer statement reads them.
  const created = await db<EventRow[]>`
    with r as (
      update email_recipients t set status = o.status, wait_reason = o.wait_reason,
             next_attempt_at = o.next_attempt_at, last_response = coalesce(o.last_response, t.last_response),
             last_event = o.last_event, last_event_at = now(), provider = coalesce(o.provider, t.provider),
             tls = coalesce(o.tls, t.tls),
             delivered_at = case when o.delivered then now() else t.delivered_at end,
             complained_at = case when o.complained then now() else t.complained_at end,
             attempt_started_at = null, attempt_job = null, attempt_expires_at = null, updated_at = now()
      from jsonb_to_recordset(${jsonParam(db, recipients)}::jsonb)
             as o(id text, status text, wait_reason text, next_attempt_at timestamptz, last_response text,
                  last_event text, provider text, tls jsonb, delivered boolean, complained boolean)
      where t.id = o.id returning t.id),
    m as (
      update emails e set last_event = x.last_event, last_event_at = now(), updated_at = now()
      from jsonb_to_recordset(${jsonParam(db, emails)}::jsonb) as x(id text, last_event text)
      where e.id = x.id returning e.id),
    s as (
      insert into suppressions (id, org_id, email, domain_id, reason, source_email_id)
      select id, org_id, email, domain_id, reason, source_email_id
      from jsonb_to_recordset(${jsonParam(db, suppressions)}::jsonb)
             as x(id text, org_id text, email text, domain_id text, reason text, source_email_id text)
      on conflict (org_id, email, (coalesce(domain_id, ''))) do nothing returning id)
    insert into events (id, org_id, mode, type, email_id, recipient_id, inbound_id, recipient, bounce_type,
                        detail, url, domain_id, key_id, template_id, kind, provider, blocked, data, dedupe_key,
                        created_at)
    select id, org_id, mode, type, email_id, recipient_id, inbound_id, recipient, bounce_type, detail, url,
           domain_id, key_id, template_id, kind, provider, blocked, data, dedupe_key, created_at
    from jsonb_populate_recordset(null::events, ${jsonParam(db, eventRows(outcomes.flatMap((o) => o.events)))}::jsonb)
    on conflict (dedupe_key) do nothing
    returning *`;
  const byKey = new Map(created.map((e) => [e.dedupe_key, e]));
  return outcomes.map((o) => o.events.flatMap((e) => byKey.get(e.dedupeKey) ?? []));
}
