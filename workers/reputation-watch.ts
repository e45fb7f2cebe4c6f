// The reputation watch's schedule (shared/reputation/watch.ts does one check). It runs with the
// webhook-fanout consumer, whose organization events it produces: every minute each worker
// process asks whether a check is due (shared/db/reputation.ts claimWatchRun moves the schedule
// RBL_CHECK_MINUTES on, so one process runs each check). Off when RBL_ZONES and DBL_ZONES are
// both empty.
import { publishEvents } from '../shared/events.js';
import { claimWatchRun } from '../shared/db/reputation.js';
import { checkReputation } from '../shared/reputation/watch.js';
import type { WorkerDeps } from './deps.js';
import { runEvery } from './periodic.js';

/** Runs a check when one is due; true when this process ran it. */
export async function watchWhenDue(deps: WorkerDeps): Promise<boolean> {
  if (!(await claimWatchRun(deps.sql, deps.config.rblCheckMinutes))) return false;
  await checkReputation({ ...deps, publish: (ids) => publishEvents(deps.sql, deps.queues, ids) });
  return true;
}

/** Starts asking every `everyMs` (default a minute); returns its stop. */
export function startReputationWatch(deps: WorkerDeps, everyMs = 60_000): () => void {
  if (deps.config.rblZones.length === 0 && deps.config.dblZones.length === 0) return () => undefined;
  const failed = (err: unknown) =>
    deps.logger.warn({ event: 'RBL_CHECK_FAILED', err }, 'reputation check failed; retried later');
  void watchWhenDue(deps).catch(failed);
  return runEvery(Math.min(everyMs, deps.config.rblCheckMinutes * 60_000), () => watchWhenDue(deps), failed);
}
