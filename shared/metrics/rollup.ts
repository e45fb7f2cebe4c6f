// The metrics rollup (DESIGN §8): one transaction claims events not yet counted (marking them),
// keeps only the first open/click per recipient, and applies what each event adds to the metrics
// tables. A batch processed twice counts once; test-mode events are marked and never counted.
import {
  applyDeltas,
  claimEvents,
  claimPending,
  firstEngagements,
  uniqueType,
  type ClaimedEvent,
  type Delta,
} from '../db/metrics.js';
import type { Db, Sql } from '../db/pool.js';
import { countersOf } from './counters.js';

/** Counts claimed events (inside the claiming transaction); returns how many moved a counter. */
async function countClaimed(tx: Db, claimed: ClaimedEvent[]): Promise<number> {
  const live = claimed.filter((e) => e.mode === 'live');
  const firsts = await firstEngagements(tx, live);
  const deltas: Delta[] = [];
  for (const e of live) {
    const engagement = e.type === 'email.opened' || e.type === 'email.clicked';
    if (engagement && e.recipient_id) {
      // Only the first open/click of a recipient counts (a person's and a machine's apart), also
      // when two land in the same batch.
      if (!firsts.delete(`${e.recipient_id}|${uniqueType(e)}`)) continue;
    }
    const counts = countersOf(e);
    if (Object.keys(counts).length === 0) continue;
    deltas.push({
      orgId: e.org_id,
      day: e.created_at.toISOString().slice(0, 10),
      domainId: e.domain_id ?? '',
      provider: e.provider ?? '',
      keyId: e.key_id ?? '',
      templateId: e.template_id ?? '',
      kind: e.kind ?? '',
      stream: e.stream ?? '',
      counts,
    });
  }
  await applyDeltas(tx, deltas);
  return deltas.length;
}

/**
 * Counts a batch of events exactly once: one transaction claims the events not yet counted
 * (marking them), keeps only the first open/click per recipient, and applies the deltas. A batch
 * processed twice counts once. Test-mode events are marked and never counted. Returns how many
 * events this call counted.
 */
export async function rollupEvents(sql: Sql, eventIds: string[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  return await sql.begin(async (tx) => await countClaimed(tx, await claimEvents(tx, eventIds)));
}

/**
 * Claims and counts up to `limit` events not yet counted, oldest first, in one transaction.
 * SKIP LOCKED lets several workers drain at once on disjoint rows. Returns how many events were
 * claimed (0 = nothing pending).
 */
export async function rollupPending(sql: Sql, limit: number): Promise<{ claimed: number; counted: number }> {
  return await sql.begin(async (tx) => {
    const claimed = await claimPending(tx, limit);
    return { claimed: claimed.length, counted: await countClaimed(tx, claimed) };
  });
}
