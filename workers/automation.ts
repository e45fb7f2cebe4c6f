// The automation engine. A scanner (one at a time across processes: an advisory lock) turns
// pending custom events (contact_events) and new contacts into runs, one per automation, contact
// and occurrence, enqueues each run's first step, and wakes the runs waiting for those events.
// The `automation` queue runs one step per job (job id = run id + step + why): a wait or a
// wait_for_event holds the run on its step until due (next_at; a delayed job, and the sweep when
// Redis lost it), every other step does its work, records it in the run's history
// (automation_run_steps) and moves to the step its path names, in one transaction under the
// run's row lock. Before each step the contact is checked: unsubscribed or suppressed (the
// delivery path's suppression_reason, rules included) → the run ends `exited`. A disabled
// automation stops its runs at their next step. Contacts created by a domain-restricted key start
// nothing (contacts.automations_on_create).
import { Worker, type Job } from 'bullmq';
import { pendingContactEvents, markContactEventsConsumed } from '../shared/db/contact-events.js';
import {
  advanceRun,
  enabledAutomations,
  insertRuns,
  lockRun,
  markContactsSeen,
  pendingCreatedContacts,
  recordRunStep,
  resumeWaitingRuns,
  runContact,
  stalledRuns,
  tryScanLock,
  type AutomationRow,
  type NewRun,
  type RunRow,
} from '../shared/db/automations.js';
import { enqueueDeliveries } from '../shared/webhooks/rules.js';
import type { TxSql } from '../shared/db/pool.js';
import { stepType, type AutomationStep } from '../shared/automation-steps.js';
import { streamOf } from '../shared/prom/labels.js';
import { enqueueMail, QUEUE_NAMES, TAKEOVER_LOCKS, type AutomationJob, WORKER_RETRY } from '../shared/queues.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { takeStep, type Contact, type SideEffects, type StepResult } from './automation/steps.js';
import { logWorkerErrors } from './worker-errors.js';

const SCAN_LIMIT = 500;

function stepJob(runId: string, step: number, delayMs = 0, suffix = '') {
  return {
    name: 'step',
    data: { runId, step },
    opts: { jobId: `${runId}-${step}${suffix}`, delay: Math.max(0, delayMs) },
  };
}

function runsFor(
  automations: AutomationRow[],
  match: (a: AutomationRow) => boolean,
  base: Omit<NewRun, 'automation_id' | 'steps'>,
) {
  return automations
    .filter((a) => a.org_id === base.org_id && match(a))
    .map((a) => ({ ...base, automation_id: a.id, steps: a.steps }));
}

/**
 * Starts the runs that pending events and new contacts trigger, and wakes the runs waiting for
 * those events; returns the step jobs to enqueue.
 */
async function scanOnce(tx: TxSql): Promise<ReturnType<typeof stepJob>[]> {
  if (!(await tryScanLock(tx))) return [];
  const events = await pendingContactEvents(tx, SCAN_LIMIT);
  const created = await pendingCreatedContacts(tx, SCAN_LIMIT);
  const orgs = [...new Set([...events.map((e) => e.org_id), ...created.map((c) => c.org_id)])];
  const automations = await enabledAutomations(tx, orgs);
  const runs: NewRun[] = [
    ...events.flatMap((e) =>
      runsFor(automations, (a) => a.trigger_type === 'event' && a.trigger_event === e.name, {
        org_id: e.org_id,
        contact_id: e.contact_id,
        occurrence: e.id,
        mode: e.mode,
        context: e.properties,
      }),
    ),
    ...created.flatMap((c) =>
      runsFor(automations, (a) => a.trigger_type === 'contact_created', {
        org_id: c.org_id,
        contact_id: c.id,
        occurrence: 'created',
        mode: c.mode,
        context: {},
      }),
    ),
  ];
  const ids = await insertRuns(tx, runs);
  const resumed = await resumeWaitingRuns(tx, events);
  await markContactEventsConsumed(
    tx,
    events.map((e) => e.id),
  );
  await markContactsSeen(
    tx,
    created.map((c) => c.id),
  );
  return [...ids.map((id) => stepJob(id, 0)), ...resumed.map((r) => stepJob(r.id, r.step, 0, '-event'))];
}

/** One scan; returns how many step jobs it enqueued (new runs and woken waits). */
export async function scanTriggers(deps: WorkerDeps): Promise<number> {
  const jobs = await deps.sql.begin((tx) => scanOnce(tx));
  // A lost add is found again by the stalled-run sweep (next_at is now).
  if (jobs.length > 0) await deps.queues.automation.addBulk(jobs);
  return jobs.length;
}

type Ended = 'completed' | 'stopped' | 'failed' | 'exited';

type StepOutcome =
  | { kind: 'idle' }
  | ({ kind: 'next'; step: number; delayMs: number; suffix?: string } & SideEffects)
  | ({ kind: 'ended'; status: Ended } & SideEffects);

/** Why the run ends before its step (as data), or the step and the contact it is taken for. */
async function checkRun(
  tx: TxSql,
  run: RunRow & { automation_status: string },
): Promise<{ end: Ended; exitReason?: string } | { step: AutomationStep; contact: Contact }> {
  if (run.automation_status !== 'enabled') return { end: 'stopped' };
  const step = run.steps[run.step];
  if (!step) return { end: 'completed' };
  // A contact who unsubscribed or whose address is suppressed (as delivery checks it) leaves.
  const contact = await runContact(tx, run.org_id, run.contact_id);
  if (!contact) return { end: 'exited', exitReason: 'contact_deleted' };
  if (contact.unsubscribed) return { end: 'exited', exitReason: 'unsubscribed' };
  if (contact.suppressed) return { end: 'exited', exitReason: `suppressed: ${contact.suppressed}` };
  return { step, contact };
}

async function endRun(
  tx: TxSql,
  run: RunRow,
  status: Ended,
  p: { error?: string; exitReason?: string } = {},
): Promise<StepOutcome> {
  await advanceRun(tx, run.id, run.step, {
    step: status === 'completed' ? run.steps.length : run.step,
    status,
    nextAt: null,
    stepStartedAt: status === 'completed' ? null : run.step_started_at,
    ...p,
  });
  return { kind: 'ended', status };
}

/** Writes what the step decided: its history row, and the run's move, hold or end. */
async function applyResult(
  tx: TxSql,
  run: RunRow,
  step: AutomationStep,
  now: Date,
  r: StepResult,
): Promise<StepOutcome> {
  if (r.kind === 'sleep') return { kind: 'next', step: run.step, delayMs: r.ms, suffix: r.suffix };
  if (r.kind === 'hold') {
    await advanceRun(tx, run.id, run.step, {
      step: run.step,
      status: 'active',
      nextAt: new Date(now.getTime() + r.ms),
      stepStartedAt: now,
      waitingFor: r.waitingFor,
    });
    return { kind: 'next', step: run.step, delayMs: r.ms, suffix: '-due' };
  }
  const steps = run.steps.length;
  const target = r.kind === 'go' ? r.target : steps;
  await recordRunStep(tx, {
    run_id: run.id,
    step: run.step,
    step_id: step.id ?? null,
    type: stepType(step),
    started_at: run.step_started_at ?? now,
    outcome: r.kind === 'go' ? r.outcome : 'failed',
    next_step: target < steps ? target : null,
    detail: r.kind === 'go' ? r.detail : { error: r.error },
  });
  if (r.kind === 'failed') return await endRun(tx, run, 'failed', { error: r.error });
  const done = target >= steps;
  await advanceRun(tx, run.id, run.step, {
    step: done ? steps : target,
    status: done ? 'completed' : 'active',
    nextAt: done ? null : now,
    stepStartedAt: null,
    ...(r.effects.emailId ? { emailId: r.effects.emailId } : {}),
  });
  return done
    ? { kind: 'ended', status: 'completed', ...r.effects }
    : { kind: 'next', step: target, delayMs: 0, ...r.effects };
}

/**
 * One step of a run, in one transaction under the run's row lock: lock, check, take, apply. A
 * job for a run that moved on (or ended) does nothing.
 */
async function runStep(tx: TxSql, job: AutomationJob): Promise<StepOutcome> {
  const run = await lockRun(tx, job.runId);
  if (!run || run.status !== 'active' || run.step !== job.step) return { kind: 'idle' };
  const checked = await checkRun(tx, run);
  if ('end' in checked) return await endRun(tx, run, checked.end, { exitReason: checked.exitReason });
  const now = new Date();
  const result = await takeStep({ tx, run, contact: checked.contact, now }, checked.step);
  return await applyResult(tx, run, checked.step, now, result);
}

export async function processRunStep(deps: WorkerDeps, job: AutomationJob): Promise<StepOutcome> {
  const outcome = await deps.sql.begin((tx) => runStep(tx, job));
  if (outcome.kind === 'idle') return outcome;
  if (outcome.emailId && outcome.orgId) {
    deps.prom.inc('tern_emails_accepted_total', ['automation', streamOf('automation')]);
    await enqueueMail(deps.queues, [
      { emailId: outcome.emailId, orgId: outcome.orgId, stream: streamOf('automation'), jobId: outcome.emailId },
    ]);
  }
  // A lost add is found again by the webhook delivery sweeper (the delivery is due now).
  if (outcome.delivery) await enqueueDeliveries(deps.queues, [outcome.delivery]);
  if (outcome.kind === 'next') {
    const next = stepJob(job.runId, outcome.step, outcome.delayMs, outcome.suffix);
    await deps.queues.automation.add(next.name, next.data, next.opts);
  }
  return outcome;
}

/** Re-enqueues steps of active runs overdue by `graceSeconds` (their job lost); returns how many. */
export async function sweepRuns(deps: WorkerDeps, graceSeconds = 120): Promise<number> {
  const runs = await stalledRuns(deps.sql, graceSeconds, 500);
  const stamp = Date.now();
  if (runs.length > 0)
    await deps.queues.automation.addBulk(runs.map((r) => stepJob(r.id, r.step, 0, `-sweep-${stamp}`)));
  return runs.length;
}

export interface AutomationWorkerOptions {
  /** How often pending events and contacts are scanned. */
  scanEveryMs?: number;
  /** Every this many scans, overdue runs are swept. */
  sweepEveryScans?: number;
  concurrency?: number;
}

export function startAutomationWorker(deps: WorkerDeps, opts: AutomationWorkerOptions = {}): Worker<AutomationJob> {
  const worker = new Worker<AutomationJob>(
    QUEUE_NAMES.automation,
    async (job: Job<AutomationJob>) => (await processRunStep(deps, job.data)).kind,
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency: opts.concurrency ?? 8,
      ...TAKEOVER_LOCKS,
    },
  );
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'AUTOMATION_STEP_FAILED', runId: job?.data.runId, err }, 'automation step failed'),
  );
  logWorkerErrors(worker, deps.logger, 'AUTOMATION_WORKER_ERROR');
  let busy = false;
  let scans = 0;
  const sweepEvery = opts.sweepEveryScans ?? 30;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    scans += 1;
    const work = async () => {
      await scanTriggers(deps);
      if (scans % sweepEvery === 0) await sweepRuns(deps);
    };
    work()
      .catch((err: unknown) => deps.logger.warn({ event: 'AUTOMATION_SCAN_FAILED', err }, 'automation scan failed'))
      .finally(() => {
        busy = false;
      });
  }, opts.scanEveryMs ?? 2000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}

export const automationConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.automation,
  start: (deps) => startAutomationWorker(deps),
};
