// Look-ups of the delivery sweeper and of alert rules.
import type { Db } from './pool.js';

/**
 * Messages with a recipient that should be moving but may have lost its job: due (or never
 * scheduled) for longer than `graceSeconds`, and not held by an attempt younger than
 * `leaseSeconds`. `due` is when its job was meant to run (the id of a retry or hold job is
 * `<email id>-<due ms>`), null for the API's first job (id = email id).
 */
export async function findStuckEmails(
  db: Db,
  graceSeconds: number,
  leaseSeconds: number,
  limit = 500,
): Promise<{ id: string; due: Date | null }[]> {
  return await db<{ id: string; due: Date | null }[]>`
    select e.id, coalesce(min(r.next_attempt_at), e.scheduled_at) as due from emails e
    join email_recipients r on r.email_id = e.id
    where e.status in ('scheduled', 'queued', 'processing', 'sent')
      and r.status in ('scheduled', 'queued', 'sent', 'delivery_delayed')
      and coalesce(r.next_attempt_at, e.scheduled_at, e.created_at) < now() - make_interval(secs => ${graceSeconds})
      and (r.attempt_started_at is null or r.attempt_started_at < now() - make_interval(secs => ${leaseSeconds}))
    group by e.id
    limit ${limit}`;
}

/** Live sends and bounces/complaints of an org over the last `days` days. */
export async function countOutcomes(
  db: Db,
  orgId: string,
  days: number,
): Promise<{ sent: number; bounced: number; complained: number }> {
  const [row] = await db<{ sent: number; bounced: number; complained: number }[]>`
    select count(*) filter (where type = 'email.sent')::int as sent,
           count(*) filter (where type = 'email.bounced')::int as bounced,
           count(*) filter (where type = 'email.complained')::int as complained
    from events
    where org_id = ${orgId} and mode = 'live' and type in ('email.sent', 'email.bounced', 'email.complained')
      and created_at > now() - make_interval(days => ${days})`;
  return row ?? { sent: 0, bounced: 0, complained: 0 };
}

/** Pauses sending unless already paused; true when this call paused it. */
export async function pauseOrg(db: Db, orgId: string, reason: string): Promise<boolean> {
  const rows = await db`
    update organizations set sending_paused = true, sending_paused_reason = ${reason}, updated_at = now()
    where id = ${orgId} and not sending_paused returning id`;
  return rows.length === 1;
}
