// Storing and enqueueing accepted messages. One statement stores every message of a request
// (multi-row inserts chained by CTEs: one Postgres round trip); the delivery jobs are added after the commit, in one call. A message that
// committed is never reported as failed: if the enqueue fails, the row stays `queued` (or
// `scheduled`) without a job and the delivery sweeper enqueues it (job id = email id, so a
// duplicate add is a no-op).
import { insertEmails } from '../../shared/db/emails.js';
import type { Sql } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import type { Queues } from '../../shared/queues.js';
import type { PreparedEmail } from './emails-input.js';

export async function storeAndEnqueue(
  deps: { sql: Sql; queues: Queues; logger: Logger },
  prepared: PreparedEmail[],
): Promise<void> {
  if (prepared.length === 0) return;
  await insertEmails(
    deps.sql,
    prepared.map((p) => p.email),
    prepared.flatMap((p) => p.recipients),
    prepared.flatMap((p) => p.attachments),
  );
  try {
    if (prepared.length === 1) {
      const p = prepared[0]!;
      await deps.queues.delivery.add('email', { emailId: p.email.id }, jobOptions(p));
    } else {
      await deps.queues.delivery.addBulk(
        prepared.map((p) => ({ name: 'email', data: { emailId: p.email.id }, opts: jobOptions(p) })),
      );
    }
  } catch (err) {
    deps.logger.warn(
      { event: 'EMAIL_ENQUEUE_FAILED', err, emailIds: prepared.map((p) => p.email.id) },
      'stored emails could not be enqueued; the delivery sweeper will pick them up',
    );
  }
}

function jobOptions(p: PreparedEmail) {
  return p.delay > 0 ? { jobId: p.email.id, delay: p.delay } : { jobId: p.email.id };
}
