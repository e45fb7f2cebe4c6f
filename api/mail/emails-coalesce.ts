// Group commit for small sends, on shared/micro-batch.ts. Under load, POST /emails and the relay
// store one message per request; each INSERT then pays Postgres's fixed costs (a transaction, its
// commit record and WAL flush, the executor start, one network write each way) for one row. Requests that arrive
// while earlier inserts are still running wait for a slot and then share ONE insert (the insert
// of shared/db/emails.ts already takes any number of messages), so a busy API writes ten
// messages for the price of about three (docs/benchmarks.md, "send"). When the API is idle a
// request takes a free slot at once: the only wait added is the rest of the current event-loop
// turn.
//
// What each request is answered does not change:
// - stored: every message of the shared insert is stored, or none is (one statement);
// - a connection lost on the way: the shared insert runs again (it skips stored rows) until
//   Postgres answers (writeConfirmed), and an outcome still unknown is reported to every request
//   of it, each naming its own ids;
// - a statement Postgres refuses (a key or domain deleted a moment ago, say): the requests of
//   the shared insert are stored again one by one, so that only the one at fault is refused.
import type { NewAttachment, NewEmail, NewRecipient } from '../../shared/db/emails.js';
import { insertEmails } from '../../shared/db/emails.js';
import type { Sql } from '../../shared/db/pool.js';
import { isUniqueViolation } from '../../shared/errors.js';
import { MicroBatcher } from '../../shared/micro-batch.js';
import { isTransientError } from '../../shared/transient.js';
import { OutcomeUnknownError, writeConfirmed } from '../../shared/write-outcome.js';

export interface InsertRows {
  emails: NewEmail[];
  recipients: NewRecipient[];
  attachments: NewAttachment[];
}

interface Waiter {
  rows: InsertRows;
  /** Told when the insert's outcome is uncertain (the connection broke on the way). */
  onUncertain: (err: unknown) => void;
}

/**
 * Most requests in one shared insert. With at most 50 recipients and 256 KiB each, a shared
 * insert stays near shared/db/emails.ts's "large insert" thresholds (past them it simply gets
 * its own transaction and longer timeout).
 */
const MAX_SHARED = 20;

/** A request past these sizes is stored on its own (a batch request is already one insert). */
const SHARED_EMAILS = 1;
const SHARED_RECIPIENTS = 50;
const SHARED_BYTES = 256 * 1024;

function shareable(rows: InsertRows): boolean {
  if (rows.emails.length > SHARED_EMAILS || rows.recipients.length > SHARED_RECIPIENTS) return false;
  let bytes = 0;
  for (const e of rows.emails) bytes += (e.html?.length ?? 0) + (e.text?.length ?? 0) + (e.raw_mime?.length ?? 0);
  for (const a of rows.attachments) bytes += a.content.length;
  return bytes <= SHARED_BYTES;
}

export class InsertCoalescer {
  private readonly batcher: MicroBatcher<Waiter, void>;

  /**
   * `slots`: inserts running at once (part of the pool; the rest serves every other query).
   * `confirmMs`: how long writeConfirmed keeps trying to settle an uncertain outcome.
   */
  constructor(
    private readonly sql: Sql,
    slots: number,
    private readonly confirmMs: number,
  ) {
    this.batcher = new MicroBatcher<Waiter, void>(
      async (waiters) => {
        await this.store(waiters);
        return waiters.map(() => undefined);
      },
      {
        maxItems: MAX_SHARED,
        maxInFlight: slots,
        // Nothing of a refused statement was stored: each request is stored alone, so that only
        // the one Postgres refuses is refused. Unknown outcomes and outages concern all alike.
        splitOn: (err) => !(err instanceof OutcomeUnknownError) && !isTransientError(err),
      },
    );
  }

  /** Stores the rows, alone or in a shared insert; settles as writeConfirmed would. */
  async insert(rows: InsertRows, onUncertain: (err: unknown) => void): Promise<void> {
    const waiter = { rows, onUncertain };
    if (shareable(rows)) await this.batcher.add(waiter);
    else await this.store([waiter]);
  }

  private async store(parts: Waiter[]): Promise<void> {
    const rows =
      parts.length === 1
        ? parts[0]!.rows
        : {
            emails: parts.flatMap((p) => p.rows.emails),
            recipients: parts.flatMap((p) => p.rows.recipients),
            attachments: parts.flatMap((p) => p.rows.attachments),
          };
    const insert = (skipStored: boolean) =>
      insertEmails(this.sql, rows.emails, rows.recipients, rows.attachments, { skipStored });
    // Fresh ids (nearly every request) are inserted without ON CONFLICT; ids stored before (an
    // Idempotency-Key retry after a 504 reuses them) are refused whole, and the insert runs again
    // skipping the stored rows, as does every run after an uncertain one.
    const first = async () => {
      try {
        await insert(false);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        await insert(true);
      }
    };
    await writeConfirmed(
      first,
      {
        confirmMs: this.confirmMs,
        onUncertain: (err) => parts.forEach((p) => p.onUncertain(err)),
      },
      () => insert(true),
    );
  }
}
