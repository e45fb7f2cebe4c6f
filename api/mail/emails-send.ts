// Storing and enqueueing accepted messages (POST /emails, /emails/batch and the SMTP relay). One
// statement stores every message of a request (small requests arriving together share one:
// emails-coalesce.ts); the delivery jobs are added after it, in one call. What the answer says
// is what happened:
// - stored: the answer is a success whatever follows. A job Redis refuses is added again in the
//   background as soon as Redis answers, and the delivery sweeper adds any still missing (job id
//   = email id, so a second add is a no-op);
// - not stored: 503 unavailable (Postgres unreachable) or the error that refused the statement;
// - a connection broken while the statement was on its way: the same insert runs again (it
//   skips rows already stored) until Postgres answers, for up to STORE_CONFIRM_SECONDS; if it
//   never does, 504 outcome_unknown naming the ids (shared/write-outcome.ts).
// Stored messages count in tern_emails_accepted_total.
import type { Sql } from '../../shared/db/pool.js';
import { OutcomeUnknown } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { streamOf, type AcceptSource } from '../../shared/prom/labels.js';
import type { PromRecorder } from '../../shared/prom/recorder.js';
import type { DeliveryRequest } from '../../shared/delivery-queue.js';
import { enqueueMail, type Queues } from '../../shared/queues.js';
import { defaultStream, STREAMS } from '../../shared/streams.js';
import { retryTransient } from '../../shared/transient.js';
import { OutcomeUnknownError } from '../../shared/write-outcome.js';
import { InsertCoalescer } from './emails-coalesce.js';
import type { PreparedEmail } from './emails-input.js';

export interface StoreDeps {
  sql: Sql;
  queues: Queues;
  logger: Logger;
  prom: PromRecorder;
  config: { storeConfirmSeconds: number; databasePoolMax?: number };
}

/** One group-commit coalescer per pool (api/mail/emails-coalesce.ts). */
const coalescers = new WeakMap<Sql, InsertCoalescer>();

function coalescerOf(deps: StoreDeps): InsertCoalescer {
  let c = coalescers.get(deps.sql);
  if (!c) {
    // Half the pool runs inserts; the other half answers every other query meanwhile.
    const slots = Math.max(1, Math.floor((deps.config.databasePoolMax ?? 10) / 2));
    c = new InsertCoalescer(deps.sql, slots, deps.config.storeConfirmSeconds * 1000);
    coalescers.set(deps.sql, c);
  }
  return c;
}

/** How long a refused enqueue is tried again in the background before the sweeper is left to it. */
const ENQUEUE_RETRY_MS = 60_000;

/** The 504 of messages whose storage could not be confirmed. */
export function outcomeUnknown(ids: (string | null)[], cause?: unknown): OutcomeUnknown {
  const named = ids.filter((id): id is string => id !== null);
  const what = named.length === 1 ? `Email ${named[0]}` : `Emails ${named.join(', ')}`;
  return new OutcomeUnknown(
    ids,
    `${what} may or may not have been stored (Postgres became unreachable while storing ${named.length === 1 ? 'it' : 'them'}): ` +
      `GET /emails/${named[0]} tells (404: not stored, send again), or retry with the same Idempotency-Key, which stores ${named.length === 1 ? 'it' : 'each'} once`,
    cause,
  );
}

export async function storeAndEnqueue(deps: StoreDeps, source: AcceptSource, prepared: PreparedEmail[]): Promise<void> {
  if (prepared.length === 0) return;
  const emailIds = prepared.map((p) => p.email.id);
  try {
    await coalescerOf(deps).insert(
      {
        emails: prepared.map((p) => p.email),
        recipients: prepared.flatMap((p) => p.recipients),
        attachments: prepared.flatMap((p) => p.attachments),
      },
      (err) =>
        deps.logger.warn(
          { event: 'EMAIL_STORE_UNCERTAIN', err, emailIds },
          'connection lost while storing; running the insert again to learn whether it was stored',
        ),
    );
  } catch (err) {
    if (err instanceof OutcomeUnknownError) throw outcomeUnknown(emailIds, err.cause);
    throw err;
  }
  for (const stream of STREAMS) {
    const n = prepared.filter((p) => (p.email.stream ?? streamOf(source)) === stream).length;
    if (n > 0) deps.prom.inc('tern_emails_accepted_total', [source, stream], n);
  }
  try {
    await addJobs(deps.queues, prepared);
  } catch (err) {
    deps.logger.warn(
      { event: 'EMAIL_ENQUEUE_FAILED', err, emailIds },
      'stored emails could not be enqueued; trying again in the background (the delivery sweeper covers them)',
    );
    void enqueueLater(deps, prepared);
  }
}

async function addJobs(queues: Queues, prepared: PreparedEmail[]): Promise<void> {
  const now = Date.now();
  await enqueueMail(
    queues,
    prepared.map((p) => request(p, now)),
  );
}

/** Adds the jobs once Redis answers again; stops when the process closes its queues. */
async function enqueueLater(deps: StoreDeps, prepared: PreparedEmail[]): Promise<void> {
  const emailIds = prepared.map((p) => p.email.id);
  try {
    await retryTransient(() => addJobs(deps.queues, prepared), {
      maxMs: ENQUEUE_RETRY_MS,
      firstDelayMs: 250,
      stopped: () => deps.queues.delivery.closing !== undefined,
    });
    deps.logger.info({ event: 'EMAIL_ENQUEUE_RECOVERED', emailIds }, 'delivery jobs added after a refused enqueue');
  } catch (err) {
    deps.logger.warn({ event: 'EMAIL_ENQUEUE_ABANDONED', err, emailIds }, 'left to the delivery sweeper');
  }
}

/** The first job of a message: its id is the email id; a scheduled one waits until its time. */
function request(p: PreparedEmail, now: number): DeliveryRequest {
  const at = p.email.scheduled_at?.getTime() ?? 0;
  const e = p.email;
  const stream = e.stream ?? defaultStream(e.source ?? 'api');
  return { emailId: e.id, orgId: e.org_id, stream, jobId: e.id, ...(at > now ? { delay: at - now } : {}) };
}
