// The first step of a delivery job: the message and its pending recipients, read for the jobs of
// one batch together (two statements for many jobs), and a scheduled message released when its
// time has come.
import { enqueueMail } from '../../shared/queues.js';
import {
  getDeliveryEmails,
  pendingRecipients,
  pendingRecipientsOf,
  releaseScheduled,
  type DeliveryEmail,
  type DeliveryRecipient,
} from '../../shared/db/delivery.js';
import type { Sql } from '../../shared/db/pool.js';
import { MicroBatcher } from '../../shared/micro-batch.js';
import type { WorkerDeps } from '../deps.js';

interface Loaded {
  email: DeliveryEmail | null;
  pending: DeliveryRecipient[];
}

export class DeliveryLoader {
  private readonly batcher: MicroBatcher<string, Loaded>;

  constructor(sql: Sql) {
    this.batcher = new MicroBatcher(async (ids) => {
      const unique = [...new Set(ids)];
      const [emails, recipients] = await Promise.all([
        getDeliveryEmails(sql, unique),
        pendingRecipientsOf(sql, unique),
      ]);
      const byEmail = new Map<string, DeliveryRecipient[]>();
      for (const r of recipients) byEmail.set(r.email_id, [...(byEmail.get(r.email_id) ?? []), r]);
      const email = new Map(emails.map((e) => [e.id, e]));
      return ids.map((id) => ({ email: email.get(id) ?? null, pending: byEmail.get(id) ?? [] }));
    });
  }

  read(emailId: string): Promise<Loaded> {
    return this.batcher.add(emailId);
  }
}

/**
 * A scheduled message is released when its time has come. A job that fires early (the message
 * was rescheduled later while its job was already running) re-delays itself to `scheduled_at`.
 */
async function releaseSchedule(deps: WorkerDeps, email: DeliveryEmail): Promise<boolean> {
  if (email.status !== 'scheduled') return true;
  const at = email.scheduled_at?.getTime() ?? 0;
  if (at > Date.now() + 1000) {
    await enqueueMail(deps.queues, [
      {
        emailId: email.id,
        orgId: email.org_id,
        stream: email.stream,
        jobId: `${email.id}-${at}`,
        delay: at - Date.now(),
      },
    ]);
    return false;
  }
  return await releaseScheduled(deps.sql, email.id);
}

/** The message and its recipients due now; null when there is nothing to deliver. */
export async function load(deps: WorkerDeps, loader: DeliveryLoader, emailId: string) {
  const first = await loader.read(emailId);
  let email = first.email;
  let pending = first.pending;
  if (!email || email.status === 'canceled' || email.status === 'failed') return null;
  if (email.status === 'scheduled') {
    if (!(await releaseSchedule(deps, email))) return null;
    email = { ...email, status: 'queued' };
    // Its recipients were `scheduled` (not pending) when read alongside the message.
    pending = await pendingRecipients(deps.sql, emailId);
  }
  const soon = Date.now() + 1000;
  const due = pending.filter((r) => r.next_attempt_at === null || r.next_attempt_at.getTime() <= soon);
  return { email, pending, due };
}
