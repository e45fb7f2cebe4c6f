// Hand-over: everything before SMTP, for the jobs of one batch in one transaction (one commit):
// claim the messages the API still holds, reject suppressed recipients, email.sent for
// recipients handed over for the first time, the attempt lease (attempts + 1, in-flight marker)
// recorded before talking SMTP, and each message 'sent' once leased. After the claim (one round
// trip: a message canceled meanwhile drops out of the batch) the other statements are pipelined
// in one round trip, each seeing the writes of those before it.
import {
  finishLeasedEmails,
  leaseRecipients,
  markSent,
  recordOutcomes,
  type Lease,
  type Outcome,
} from '../../shared/db/delivery-attempts.js';
import { claimEmails } from '../../shared/db/delivery.js';
import type { Sql } from '../../shared/db/pool.js';
import { recordEvents, type NewEvent } from '../../shared/events.js';
import { MicroBatcher } from '../../shared/micro-batch.js';
import { ATTEMPT_LEASE_SECONDS } from './leases.js';

export interface HandOverItem {
  emailId: string;
  /** Take the message from the API's hands first (it was queued or scheduled when loaded). */
  claim: boolean;
  /** The lease holder: one token per run of a job (workers/delivery/leases.ts). */
  jobId: string;
  /** Queued recipients: marked sent, with `sent` their email.sent events. */
  fresh: string[];
  sent: NewEvent[];
  /** Recipients to lease (every one not rejected). */
  lease: string[];
  /** Suppressed recipients' outcomes (rejected). */
  rejected: Outcome[];
}

export interface HandedOver {
  /** Ids of the events this hand-over created (to publish). */
  created: string[];
  leases: Lease[];
}

/** One transaction for all `items`; null for a message that was canceled (or taken) meanwhile. */
export async function handOverAll(sql: Sql, items: HandOverItem[]): Promise<(HandedOver | null)[]> {
  return await sql.begin(async (tx) => {
    const claimed = new Set(
      await claimEmails(
        tx,
        items.filter((i) => i.claim).map((i) => i.emailId),
      ),
    );
    const ok = items.filter((i) => !i.claim || claimed.has(i.emailId));
    const [rejected, , sent, leases] = await Promise.all([
      recordOutcomes(
        tx,
        ok.flatMap((i) => i.rejected),
      ),
      markSent(
        tx,
        ok.flatMap((i) => i.fresh),
      ),
      recordEvents(
        tx,
        ok.flatMap((i) => i.sent),
      ),
      leaseRecipients(
        tx,
        ok.flatMap((i) => i.lease.map((id) => ({ id, jobId: i.jobId }))),
        ATTEMPT_LEASE_SECONDS,
      ),
      // With an attempt leased the message is handed over (unclaimEmail would change nothing).
      finishLeasedEmails(
        tx,
        ok.filter((i) => i.lease.length > 0).map((i) => ({ emailId: i.emailId, jobId: i.jobId })),
      ),
    ]);
    const eventsOf = new Map<string, string[]>();
    for (const e of [...rejected.flat(), ...sent])
      eventsOf.set(e.email_id!, [...(eventsOf.get(e.email_id!) ?? []), e.id]);
    const leaseOf = new Map(leases.map((l) => [l.id, l]));
    const handed = new Set(ok);
    return items.map((i) =>
      handed.has(i)
        ? {
            created: eventsOf.get(i.emailId) ?? [],
            leases: i.lease.flatMap((id) => leaseOf.get(id) ?? []),
          }
        : null,
    );
  });
}

/** Hands over the messages of concurrent jobs in shared transactions; one message per batch at most once. */
export class HandOvers {
  private readonly batcher: MicroBatcher<HandOverItem, HandedOver | null>;

  constructor(sql: Sql) {
    this.batcher = new MicroBatcher((items) => handOverAll(sql, items), { keyOf: (i) => i.emailId });
  }

  handOver(item: HandOverItem): Promise<HandedOver | null> {
    return this.batcher.add(item);
  }
}
