// Group commit for small sends. Under load, POST /emails and the relay store one message per
// request; each INSERT then pays Postgres's fixed costs (a transaction, its commit record and WAL
// flush, the executor start, one network write each way) for one row. Requests that arrive
// while earlier inserts are still running wait for a slot and then share ONE insert (the insert
// of shared/db/emails.ts already takes any number of messages), so a busy API writes ten
// messages for the price of about three (docs/benchmarks.md, "send"). When the API is idle a request
// takes a free slot at once: the only wait added is the rest of the current event-loop turn.
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
  size: { emails: number; recipients: number; bytes: number };
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Most of one shared insert: far below shared/db/emails.ts's "large insert" thresholds. */
const MAX_EMAILS = 100;
const MAX_RECIPIENTS = 1000;
const MAX_BYTES = 1024 * 1024;

/** A request past these sizes is stored on its own (a batch request is already one insert). */
const SHARED_EMAILS = 1;
const SHARED_RECIPIENTS = 50;
const SHARED_BYTES = 256 * 1024;

function sizeOf(rows: InsertRows): Waiter['size'] {
  let bytes = 0;
  for (const e of rows.emails) bytes += (e.html?.length ?? 0) + (e.text?.length ?? 0) + (e.raw_mime?.length ?? 0);
  for (const a of rows.attachments) bytes += a.content.length;
  return { emails: rows.emails.length, recipients: rows.recipients.length, bytes };
}

export class InsertCoalescer {
  private readonly waiting: Waiter[] = [];
  private inFlight = 0;
  private scheduled = false;

  /**
   * `slots`: inserts running at once (part of the pool; the rest serves every other query).
   * `confirmMs`: how long writeConfirmed keeps trying to settle an uncertain outcome.
   */
  constructor(
    private readonly sql: Sql,
    private readonly slots: number,
    private readonly confirmMs: number,
  ) {}

  /** Stores the rows, alone or in a shared insert; settles as writeConfirmed would. */
  async insert(rows: InsertRows, onUncertain: (err: unknown) => void): Promise<void> {
    const size = sizeOf(rows);
    const waiter = { rows, size, onUncertain };
    if (size.emails > SHARED_EMAILS || size.recipients > SHARED_RECIPIENTS || size.bytes > SHARED_BYTES) {
      await this.store([waiter]);
      return;
    }
    await new Promise<void>((resolve, reject) => {
      this.waiting.push({ ...waiter, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.scheduled || this.inFlight >= this.slots || this.waiting.length === 0) return;
    this.scheduled = true;
    // The rest of this event-loop turn: requests parsed in the same turn share the insert.
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.slots && this.waiting.length > 0) this.start(this.take());
    });
  }

  /** The next shared insert: waiters in arrival order, up to the limits (at least one). */
  private take(): Waiter[] {
    const batch: Waiter[] = [];
    let emails = 0;
    let recipients = 0;
    let bytes = 0;
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      const full =
        emails + next.size.emails > MAX_EMAILS ||
        recipients + next.size.recipients > MAX_RECIPIENTS ||
        bytes + next.size.bytes > MAX_BYTES;
      if (batch.length > 0 && full) break;
      batch.push(this.waiting.shift()!);
      emails += next.size.emails;
      recipients += next.size.recipients;
      bytes += next.size.bytes;
    }
    return batch;
  }

  private start(batch: Waiter[]): void {
    this.inFlight++;
    void this.settle(batch).finally(() => {
      this.inFlight--;
      this.kick();
    });
  }

  private async settle(batch: Waiter[]): Promise<void> {
    try {
      await this.store(batch);
      for (const w of batch) w.resolve();
      return;
    } catch (err) {
      // Nothing of a refused statement was stored: store each request alone, so that only the
      // one Postgres refuses is refused. Unknown outcomes and outages concern all alike.
      const refused = !(err instanceof OutcomeUnknownError) && !isTransientError(err);
      if (batch.length === 1 || !refused) {
        for (const w of batch) w.reject(err);
        return;
      }
    }
    await Promise.all(
      batch.map((w) =>
        this.store([w]).then(
          () => w.resolve(),
          (e: unknown) => w.reject(e),
        ),
      ),
    );
  }

  private async store(parts: Pick<Waiter, 'rows' | 'onUncertain'>[]): Promise<void> {
    const rows =
      parts.length === 1
        ? parts[0]!.rows
        : {
            emails: parts.flatMap((p) => p.rows.emails),
            recipients: parts.flatMap((p) => p.rows.recipients),
            attachments: parts.flatMap((p) => p.rows.attachments),
          };
    await writeConfirmed(() => insertEmails(this.sql, rows.emails, rows.recipients, rows.attachments), {
      confirmMs: this.confirmMs,
      onUncertain: (err) => parts.forEach((p) => p.onUncertain(err)),
    });
  }
}
