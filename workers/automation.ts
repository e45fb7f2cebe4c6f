// The automation engine. A scanner (one at a time across processes: an advisory lock) turns
// pending custom events (contact_events) and new contacts into runs, one per automation, contact
// and occurrence, and enqueues each run's first step. The `automation` queue runs one step per
// job (job id = run id + step): wait → schedule the next step that much later; send → store one
// message (source 'automation') and move on. A disabled automation stops its runs at their next
// step. Contacts created by a domain-restricted key start nothing (contacts.automations_on_create).
import { Worker, type Job } from 'bullmq';
import { buildContactEmail } from '../shared/contact-email.js';
import { pendingContactEvents, markContactEventsConsumed } from '../shared/db/contact-events.js';
import {
  advanceRun,
  enabledAutomations,
  insertRuns,
  lockRun,
  markContactsSeen,
  pendingCreatedContacts,
  stalledRuns,
  tryScanLock,
  type AutomationRow,
  type AutomationStep,
  type NewRun,
  type RunRow,
} from '../shared/db/automations.js';
import { findContact } from '../shared/db/contacts.js';
import { getOrgDomain } from '../shared/db/domains.js';
import { insertEmails } from '../shared/db/emails.js';
import type { TxSql } from '../shared/db/pool.js';
import { findTemplateVersion } from '../shared/db/templates.js';
import { parseWait } from '../shared/automation-steps.js';
import { parseMailbox } from '../shared/mail/addresses.js';
import { QUEUE_NAMES, type AutomationJob } from '../shared/queues.js';
import type { WorkerDeps } from './deps.js';
import type { QueueConsumer } from './registry.js';

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

/** Starts the runs that pending events and new contacts trigger; returns the new run ids. */
async function scanOnce(tx: TxSql): Promise<string[]> {
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
  await markContactEventsConsumed(
    tx,
    events.map((e) => e.id),
  );
  await markContactsSeen(
    tx,
    created.map((c) => c.id),
  );
  return ids;
}

export async function scanTriggers(deps: WorkerDeps): Promise<number> {
  const ids = await deps.sql.begin((tx) => scanOnce(tx));
  // A lost add is found again by the stalled-run sweep (next_at is now).
  if (ids.length > 0) await deps.queues.automation.addBulk(ids.map((id) => stepJob(id, 0)));
  return ids.length;
}

type StepOutcome =
  | { kind: 'idle' }
  | { kind: 'next'; step: number; delayMs: number; emailId?: string }
  | { kind: 'ended'; status: 'completed' | 'stopped' | 'failed' };

class StepFailure extends Error {}

/** A send step: one message to the run's contact, stored like POST /emails stores it. */
async function sendStep(tx: TxSql, run: RunRow, s: Extract<AutomationStep, { send: unknown }>['send']) {
  const contact = await findContact(tx, run.org_id, run.contact_id);
  if (!contact || contact.unsubscribed) return null;
  const template = await findTemplateVersion(tx, run.org_id, s.template, null);
  if (!template || template.version === null) throw new StepFailure(`template ${s.template} has no published version`);
  const from = parseMailbox(s.from);
  if (!from.ok) throw new StepFailure(`from ${s.from} ${from.reason}`);
  const domain = await getOrgDomain(tx, run.org_id, from.mailbox.domain);
  if (!domain || domain.status !== 'verified') throw new StepFailure(`domain ${from.mailbox.domain} is not verified`);
  let built;
  try {
    built = buildContactEmail(
      {
        orgId: run.org_id,
        keyId: null,
        mode: run.mode,
        source: 'automation',
        domain: { id: domain.id, name: domain.name },
        from: s.from,
        replyTo: [],
        subject: s.subject ?? null,
        html: null,
        text: null,
        kind: s.kind ?? 'automation',
        topicId: null,
        tags: [{ name: 'automation_id', value: run.automation_id }],
        template,
      },
      contact,
      run.context,
    );
  } catch (err) {
    throw new StepFailure((err as Error).message);
  }
  await insertEmails(tx, [built.email], [built.recipient], []);
  return built.email.id;
}

async function runStep(tx: TxSql, job: AutomationJob): Promise<StepOutcome> {
  const run = await lockRun(tx, job.runId);
  if (!run || run.status !== 'active' || run.step !== job.step) return { kind: 'idle' };
  const end = async (status: 'completed' | 'stopped' | 'failed', error?: string): Promise<StepOutcome> => {
    await advanceRun(tx, run.id, run.step, { step: run.step, status, nextAt: null, ...(error ? { error } : {}) });
    return { kind: 'ended', status };
  };
  if (run.automation_status !== 'enabled') return await end('stopped');
  const step = run.steps[run.step];
  if (!step) return await end('completed');
  if ('wait' in step) {
    const ms = parseWait(step.wait) ?? 0;
    await advanceRun(tx, run.id, run.step, { step: run.step + 1, status: 'active', nextAt: new Date(Date.now() + ms) });
    return { kind: 'next', step: run.step + 1, delayMs: ms };
  }
  try {
    const emailId = await sendStep(tx, run, step.send);
    const p = { step: run.step + 1, status: 'active' as const, nextAt: new Date(), ...(emailId ? { emailId } : {}) };
    await advanceRun(tx, run.id, run.step, p);
    return { kind: 'next', step: run.step + 1, delayMs: 0, ...(emailId ? { emailId } : {}) };
  } catch (err) {
    if (err instanceof StepFailure) return await end('failed', err.message);
    throw err;
  }
}

export async function processRunStep(deps: WorkerDeps, job: AutomationJob): Promise<StepOutcome> {
  const outcome = await deps.sql.begin((tx) => runStep(tx, job));
  if (outcome.kind !== 'next') return outcome;
  if (outcome.emailId)
    await deps.queues.delivery.add('email', { emailId: outcome.emailId }, { jobId: outcome.emailId });
  const next = stepJob(job.runId, outcome.step, outcome.delayMs);
  await deps.queues.automation.add(next.name, next.data, next.opts);
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
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: opts.concurrency ?? 8 },
  );
  worker.on('failed', (job, err) =>
    deps.logger.error({ event: 'AUTOMATION_STEP_FAILED', runId: job?.data.runId, err }, 'automation step failed'),
  );
  worker.on('error', (err) => deps.logger.error({ event: 'AUTOMATION_WORKER_ERROR', err }, 'worker error'));
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
