// The delivery journal: each worker process writes one line per message a server accepted (its
// 2xx after DATA) to a file of its own, synchronously, before the result goes to Postgres, where
// it is batched with the results of the jobs running at once (tens to hundreds of milliseconds
// on a busy machine). A job that takes over an attempt whose holder died without a result reads
// the dead holder's file (on the same machine) and records the acceptance instead of sending the
// message again. Files are `<process>.<n>.jsonl` in DELIVERY_JOURNAL_DIR; a process starts a new
// file past 1 MiB and keeps the one before it (results still waiting for Postgres), and removes
// its files when it stops cleanly; files older than a day (of processes killed long ago) are
// removed when a worker starts.
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { DeliveryEmail } from '../../shared/db/delivery.js';
import type { Logger } from '../../shared/logger.js';
import type { Leased } from './send.js';

const ROTATE_BYTES = 1024 * 1024;
const KEEP_MS = 24 * 3_600_000;

interface Entry {
  r: string;
  a: number;
  response: string;
}

export class DeliveryJournal {
  private n = 0;
  private bytes = 0;

  /** `process` is the lease holder's process token (workers/delivery/leases.ts). */
  constructor(
    private readonly dir: string,
    private readonly process: string,
  ) {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir)) {
      const file = join(dir, name);
      try {
        if (Date.now() - statSync(file).mtimeMs > KEEP_MS) rmSync(file, { force: true });
      } catch {
        // removed meanwhile by another worker
      }
    }
  }

  private file(n: number): string {
    return join(this.dir, `${this.process}.${n}.jsonl`);
  }

  /** Records that the server accepted attempt `attempt` of a recipient (before the result is stored). */
  accepted(recipientId: string, attempt: number, response: string): void {
    const line = `${JSON.stringify({ r: recipientId, a: attempt, response } satisfies Entry)}\n`;
    if (this.bytes + line.length > ROTATE_BYTES) {
      rmSync(this.file(this.n - 1), { force: true });
      this.n++;
      this.bytes = 0;
    }
    appendFileSync(this.file(this.n), line);
    this.bytes += line.length;
  }

  /** A worker that stopped cleanly (every job finished, every result stored) needs no journal. */
  close(): void {
    for (const n of [this.n - 1, this.n]) rmSync(this.file(n), { force: true });
  }

  /**
   * The acceptance the holder `holder` (`<process>:<job>:<run>`) journaled for attempt `attempt`
   * of a recipient, or null (not accepted, or journaled on another machine).
   */
  find(holder: string, recipientId: string, attempt: number): { response: string } | null {
    const process = holder.split(':')[0] ?? '';
    if (!/^[0-9a-f]+$/.test(process)) return null;
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((f) => f.startsWith(`${process}.`) && f.endsWith('.jsonl'));
    } catch {
      return null;
    }
    for (const name of names) {
      let text: string;
      try {
        text = readFileSync(join(this.dir, name), 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n')) {
        if (!line.includes(recipientId)) continue;
        try {
          const e = JSON.parse(line) as Entry;
          if (e.r === recipientId && e.a === attempt) return { response: e.response };
        } catch {
          // a line cut short by the kill
        }
      }
    }
    return null;
  }
}

export type Resumable = Leased & { resumed: boolean; previous: string | null };

/**
 * Attempts whose holder died without a result: those its journal says the server accepted are
 * returned, to be recorded as delivered without a send; the others are sent again, since no one
 * can know whether the server said 250 (a possible duplicate rather than a possible loss, RFC
 * 5321 §6.1).
 */
export function settleResumed(journal: DeliveryJournal, logger: Logger, email: DeliveryEmail, leased: Resumable[]) {
  const known: { r: Resumable; response: string }[] = [];
  for (const l of leased.filter((x) => x.resumed)) {
    const found = l.previous && email.mode === 'live' ? journal.find(l.previous, l.id, l.attempts - 1) : null;
    const log = { emailId: email.id, recipientId: l.id, previous: l.previous };
    if (found) {
      logger.info({ event: 'DELIVERY_ATTEMPT_SETTLED_FROM_JOURNAL', ...log }, 'accepted before its holder died');
      known.push({ r: l, response: found.response });
    } else logger.warn({ event: 'DELIVERY_ATTEMPT_RESUMED', ...log }, 'resuming');
  }
  return known;
}
