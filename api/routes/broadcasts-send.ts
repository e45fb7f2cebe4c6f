// Sending a broadcast: a draft moves once to `scheduled` or `sending` (a second send of it is 409
// invalid_state), then its first batch job is added. `POST /broadcasts` with `send: true` creates
// and sends in one transaction, so that a failed send leaves no draft behind its error. The
// answer says what was stored (docs/operations.md): a write cut by a lost connection runs again
// (the insert skips a stored id; a draft no longer a draft was moved by the first run), and when
// Postgres stays away the answer is 504 outcome_unknown naming the broadcast.
import type { AuthContext } from '../../shared/auth.js';
import { enqueueBatch } from '../../shared/broadcast-jobs.js';
import { getBroadcast, insertBroadcast, startSend, type BroadcastRow } from '../../shared/db/broadcasts.js';
import type { Db, Sql } from '../../shared/db/pool.js';
import { assertNotDemoLive } from '../../shared/domains/demo.js';
import { ApiError, OutcomeUnknown, validationError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Queues } from '../../shared/queues.js';
import { OutcomeUnknownError, writeConfirmed } from '../../shared/write-outcome.js';
import { parseSchedule } from '../mail/emails-input.js';
import { scopeOf } from './emails.js';

export type SendDeps = { sql: Sql; queues: Queues; logger: Logger; config: { storeConfirmSeconds: number } };
export type NewBroadcast = Parameters<typeof insertBroadcast>[1];

/** What a send needs beyond the draft being a draft: a segment and a domain still fit to send. */
function checkSendable(auth: AuthContext, b: Pick<BroadcastRow, 'segment_id' | 'domain_id' | 'mode'>): void {
  if (b.segment_id === null) throw validationError('segment_id: the broadcast has no segment (it was deleted)');
  const domain = auth.domains.find((d) => d.id === b.domain_id);
  if (domain?.status !== 'verified') throw validationError(`from: domain ${domain?.name ?? ''} is not verified`);
  assertNotDemoLive(domain, b.mode);
}

/** The send time: the one given, else the draft's own when still ahead, else now (null). */
export function sendTime(given: string | null | undefined, b: Pick<BroadcastRow, 'scheduled_at'>, now: number) {
  if (given) return parseSchedule('body.scheduled_at', given, now);
  return b.scheduled_at && b.scheduled_at.getTime() > now ? b.scheduled_at : null;
}

/** Runs a write of these routes, confirmed (shared/write-outcome.ts); 504 naming the broadcast when it cannot be. */
export async function confirmed<T>(
  deps: SendDeps,
  id: string,
  what: string,
  write: () => Promise<T>,
  again = write,
): Promise<T> {
  try {
    return await writeConfirmed(
      write,
      {
        confirmMs: deps.config.storeConfirmSeconds * 1000,
        onUncertain: (err) =>
          deps.logger.warn({ event: 'BROADCAST_STORE_UNCERTAIN', err, broadcastId: id }, 'running the write again'),
      },
      again,
    );
  } catch (err) {
    if (!(err instanceof OutcomeUnknownError)) throw err;
    throw new OutcomeUnknown(
      [id],
      `Broadcast ${id} may or may not have been ${what} (Postgres became unreachable meanwhile): GET /broadcasts/${id} tells`,
    );
  }
}

/**
 * Moves the broadcast out of `draft` through `start`, confirmed: run again after a lost
 * connection, a broadcast that is no longer a draft was moved by the first run (it was a draft
 * just before). Then adds its first batch job.
 */
async function started(
  deps: SendDeps,
  auth: AuthContext,
  id: string,
  at: Date | null,
  start: () => Promise<BroadcastRow | null>,
): Promise<BroadcastRow> {
  const scope = scopeOf(auth);
  const row = await confirmed(deps, id, 'sent (it is still a draft if not)', start, async () => {
    const moved = await start();
    if (moved) return moved;
    const now = await getBroadcast(deps.sql, scope, id);
    return now && now.status !== 'draft' ? now : null;
  });
  if (!row) throw new ApiError('invalid_state', `Broadcast ${id} is no longer a draft; only a draft can be sent`);
  try {
    await enqueueBatch(deps.queues, row.id, null, { delayMs: at ? at.getTime() - Date.now() : 0 });
  } catch (err) {
    // The state change committed: the broadcast sweeper starts a send whose first job is missing.
    deps.logger.warn({ event: 'BROADCAST_ENQUEUE_FAILED', err, broadcastId: row.id }, 'left to the sweeper');
  }
  return row;
}

export async function sendDraft(
  deps: SendDeps,
  auth: AuthContext,
  b: BroadcastRow,
  at: Date | null,
): Promise<BroadcastRow> {
  if (b.status !== 'draft')
    throw new ApiError('invalid_state', `Broadcast ${b.id} is ${b.status}; only a draft can be sent`);
  checkSendable(auth, b);
  return await started(deps, auth, b.id, at, () => startSend(deps.sql, scopeOf(auth), b.id, at));
}

/** POST /broadcasts with `send: true`: the draft and its send in one transaction. */
export async function createAndSend(
  deps: SendDeps,
  auth: AuthContext,
  b: NewBroadcast,
  at: Date | null,
): Promise<BroadcastRow> {
  checkSendable(auth, b);
  const scope = scopeOf(auth);
  return await started(deps, auth, b.id, at, () =>
    deps.sql.begin(async (tx: Db) => {
      await insertBroadcast(tx, b);
      return await startSend(tx, scope, b.id, at);
    }),
  );
}
