// Look-ups of the delivery sweeper and of alert rules.
import type { Stream } from '../streams.js';
import type { Db } from './pool.js';

/**
 * Messages with a recipient that should be moving but may have lost its job: due (or never
 * scheduled) for longer than `graceSeconds`, and not held by a live attempt (a lease expired
 * more than `graceSeconds` ago is a dead holder's). `due` is when its job was meant to run (the
 * id of a retry or hold job is `<email id>-<due ms>`), null for the API's first job (id = email
 * id). Pages by email id: `after` is the last id of the previous page.
 */
export interface StuckEmail {
  id: string;
  org_id: string;
  stream: Stream;
  due: Date | null;
}

export async function findStuckEmails(db: Db, graceSeconds: number, after = '', limit = 500): Promise<StuckEmail[]> {
  return await db<StuckEmail[]>`
    select e.id, e.org_id, e.stream, coalesce(min(r.next_attempt_at), e.scheduled_at) as due from emails e
    join email_recipients r on r.email_id = e.id
    where e.status in ('scheduled', 'queued', 'processing', 'sent') and e.id > ${after}
      and r.status in ('scheduled', 'queued', 'sent', 'delivery_delayed')
      and coalesce(r.next_attempt_at, e.scheduled_at, e.created_at) < now() - make_interval(secs => ${graceSeconds})
      and (r.attempt_started_at is null
           or coalesce(r.attempt_expires_at, r.attempt_started_at) < now() - make_interval(secs => ${graceSeconds}))
    group by e.id
    order by e.id
    limit ${limit}`;
}

/**
 * Messages left `queued` or `processing` for more than `graceSeconds` although none of their
 * recipients can move any more (every one rejected, failed or canceled): the sweeper settles
 * them (`settleEmails`). Such messages were left behind by a job that died between its last
 * recipient's result and the message's status.
 */
export async function findSettledEmails(db: Db, graceSeconds: number, limit = 1000): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select e.id from emails e
    where e.status in ('queued', 'processing') and e.updated_at < now() - make_interval(secs => ${graceSeconds})
      and exists (select 1 from email_recipients r where r.email_id = e.id)
      and not exists (select 1 from email_recipients r where r.email_id = e.id
                      and r.status in ('scheduled', 'queued', 'sent', 'delivery_delayed'))
    order by e.updated_at
    limit ${limit}`;
  return rows.map((r) => r.id);
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
