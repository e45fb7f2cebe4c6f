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
import { buildContactEmail } from '../shared/contact-email.js';
import { pendingContactEvents, markContactEventsConsumed } from '../shared/db/contact-events.js';
import {
  advanceRun,
  conditionHolds,
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
import { updateContact } from '../shared/db/contacts.js';
import { findSegments, setSegmentMember, type SegmentRow } from '../shared/db/segments.js';
import { insertTestDelivery } from '../shared/db/webhook-deliveries.js';
import { getWebhook } from '../shared/db/webhooks.js';
import { newId } from '../shared/ids.js';
import { enqueueDeliveries } from '../shared/webhooks/rules.js';
import { getOrgDomain } from '../shared/db/domains.js';
import { demoDomainMessage } from '../shared/domains/demo.js';
import { insertEmails } from '../shared/db/emails.js';
import type { TxSql } from '../shared/db/pool.js';
import { findTemplateVersion } from '../shared/db/templates.js';
import {
  AUTOMATION_WEBHOOK_EVENT,
  stepType,
  targetIndex,
  type AutomationStep,
  type Condition,
} from '../shared/automation-steps.js';
import { parseWait } from '../shared/durations.js';
import { parseMailbox } from '../shared/mail/addresses.js';
import { streamOf } from '../shared/prom/labels.js';
import { enqueueMail, QUEUE_NAMES, TAKEOVER_LOCKS, type AutomationJob } from '../shared/queues.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
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

interface SideEffects {
  emailId?: string;
  /** The organization of the email sent (its delivery job's fair share). */
  orgId?: string;
  delivery?: { id: string; webhookId: string };
}

type StepOutcome =
  | { kind: 'idle' }
  | ({ kind: 'next'; step: number; delayMs: number; suffix?: string } & SideEffects)
  | ({ kind: 'ended'; status: Ended } & SideEffects);

class StepFailure extends Error {}

type SendSpec = Extract<AutomationStep, { send: unknown }>['send'];
type Contact = NonNullable<Awaited<ReturnType<typeof runContact>>>;

/** A send step: one message to the run's contact, stored like POST /emails stores it. */
async function sendStep(tx: TxSql, run: RunRow, contact: Contact, s: SendSpec): Promise<string> {
  const template = await findTemplateVersion(tx, run.org_id, s.template, null);
  if (!template || template.version === null) throw new StepFailure(`template ${s.template} has no published version`);
  const from = parseMailbox(s.from);
  if (!from.ok) throw new StepFailure(`from ${s.from} ${from.reason}`);
  const domain = await getOrgDomain(tx, run.org_id, from.mailbox.domain);
  if (!domain || domain.status !== 'verified') throw new StepFailure(`domain ${from.mailbox.domain} is not verified`);
  if (domain.demo && run.mode === 'live') throw new StepFailure(demoDomainMessage(domain.name));
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

/** The segment ids a condition names. */
function conditionSegments(c: Condition, into: Set<string> = new Set()): Set<string> {
  if ('all' in c) c.all.forEach((x) => conditionSegments(x, into));
  else if ('any' in c) c.any.forEach((x) => conditionSegments(x, into));
  else if ('not' in c) conditionSegments(c.not, into);
  else if ('in_segment' in c) into.add(c.in_segment);
  return into;
}

async function segmentsOf(tx: TxSql, orgId: string, ids: Set<string>): Promise<Map<string, SegmentRow>> {
  const rows = await findSegments(tx, orgId, [...ids]);
  const found = new Map(rows.map((r) => [r.id, r]));
  const missing = [...ids].find((id) => !found.has(id));
  if (missing) throw new StepFailure(`segment ${missing} no longer exists`);
  return found;
}

/** The webhook step's body: the envelope of every webhook, type `automation.webhook`. */
function webhookBody(run: RunRow, index: number, step: AutomationStep, contact: Contact, payload: unknown): Buffer {
  const envelope = {
    type: AUTOMATION_WEBHOOK_EVENT,
    created_at: new Date().toISOString(),
    data: {
      automation_id: run.automation_id,
      run_id: run.id,
      step: index,
      step_id: step.id ?? null,
      contact: {
        id: contact.id,
        email: contact.email,
        first_name: contact.first_name,
        last_name: contact.last_name,
        properties: contact.properties,
      },
      trigger: run.occurrence === 'created' ? 'contact_created' : run.occurrence,
      context: run.context,
      payload: payload ?? null,
    },
  };
  return Buffer.from(JSON.stringify(envelope), 'utf8');
}

/** A step that waits is due again within this much of its time (timer skew). */
const EARLY_MS = 50;

async function runStep(tx: TxSql, job: AutomationJob): Promise<StepOutcome> {
  const run = await lockRun(tx, job.runId);
  if (!run || run.status !== 'active' || run.step !== job.step) return { kind: 'idle' };
  const steps = run.steps;
  const i = run.step;
  const now = new Date();
  const end = async (status: Ended, p: { error?: string; exitReason?: string } = {}): Promise<StepOutcome> => {
    await advanceRun(tx, run.id, i, {
      step: status === 'completed' ? steps.length : i,
      status,
      nextAt: null,
      stepStartedAt: status === 'completed' ? null : run.step_started_at,
      ...p,
    });
    return { kind: 'ended', status };
  };
  if (run.automation_status !== 'enabled') return await end('stopped');
  const step = steps[i];
  if (!step) return await end('completed');

  // A contact who unsubscribed or whose address is suppressed (as delivery checks it) leaves.
  const contact = await runContact(tx, run.org_id, run.contact_id);
  if (!contact) return await end('exited', { exitReason: 'contact_deleted' });
  if (contact.unsubscribed) return await end('exited', { exitReason: 'unsubscribed' });
  if (contact.suppressed) return await end('exited', { exitReason: `suppressed: ${contact.suppressed}` });

  const type = stepType(step);
  const startedAt = run.step_started_at ?? now;
  /** Leaves the step with `outcome` for the step at `target` (or the end of the run). */
  const go = async (
    outcome: string,
    target: number,
    detail: Record<string, unknown> = {},
    effects: SideEffects = {},
  ): Promise<StepOutcome> => {
    await recordRunStep(tx, {
      run_id: run.id,
      step: i,
      step_id: step.id ?? null,
      type,
      started_at: startedAt,
      outcome,
      next_step: target < steps.length ? target : null,
      detail,
    });
    const done = target >= steps.length;
    await advanceRun(tx, run.id, i, {
      step: done ? steps.length : target,
      status: done ? 'completed' : 'active',
      nextAt: done ? null : now,
      stepStartedAt: null,
      ...(effects.emailId ? { emailId: effects.emailId } : {}),
    });
    return done
      ? { kind: 'ended', status: 'completed', ...effects }
      : { kind: 'next', step: target, delayMs: 0, ...effects };
  };
  /** Enters a step that lasts: due again in `ms`. */
  const hold = async (ms: number, waitingFor: string | null, suffix: string): Promise<StepOutcome> => {
    await advanceRun(tx, run.id, i, {
      step: i,
      status: 'active',
      nextAt: new Date(now.getTime() + ms),
      stepStartedAt: now,
      waitingFor,
    });
    return { kind: 'next', step: i, delayMs: ms, suffix };
  };
  /** Woken before the step is due (a sweep, a duplicate job): sleep again until then. */
  const early = (): StepOutcome | null => {
    const due = run.next_at?.getTime() ?? 0;
    return due - now.getTime() > EARLY_MS
      ? { kind: 'next', step: i, delayMs: due - now.getTime(), suffix: `-due-${now.getTime()}` }
      : null;
  };

  try {
    if ('wait' in step) {
      if (run.step_started_at === null) return await hold(parseWait(step.wait) ?? 0, null, '-due');
      return early() ?? (await go('waited', targetIndex(steps, i, step.next)));
    }
    if ('wait_for_event' in step) {
      const w = step.wait_for_event;
      if (run.step_started_at === null) return await hold(parseWait(w.timeout) ?? 0, w.event, '-due');
      if (run.awaited_event_id) {
        return await go('event_received', targetIndex(steps, i, step.next), { event_id: run.awaited_event_id });
      }
      return early() ?? (await go('timed_out', targetIndex(steps, i, step.on_timeout)));
    }
    if ('condition' in step) {
      const segments = await segmentsOf(tx, run.org_id, conditionSegments(step.condition));
      const ok = await conditionHolds(tx, run, step.condition, segments);
      return await go(ok ? 'true' : 'false', targetIndex(steps, i, ok ? step.then : step.else));
    }
    if ('update_contact' in step) {
      const u = step.update_contact;
      await updateContact(tx, run.org_id, contact.id, {
        firstName: u.first_name,
        lastName: u.last_name,
        properties: u.properties,
      });
      return await go('updated', targetIndex(steps, i, step.next), { fields: Object.keys(u) });
    }
    if ('add_to_segment' in step || 'remove_from_segment' in step) {
      const add = 'add_to_segment' in step;
      const id = add ? step.add_to_segment : (step as { remove_from_segment: string }).remove_from_segment;
      await segmentsOf(tx, run.org_id, new Set([id]));
      await setSegmentMember(tx, id, contact.id, add);
      return await go(add ? 'added' : 'removed', targetIndex(steps, i, step.next), { segment_id: id });
    }
    if ('webhook' in step) {
      const w = await getWebhook(tx, run.org_id, step.webhook.webhook_id);
      if (!w) throw new StepFailure(`webhook ${step.webhook.webhook_id} no longer exists`);
      const next = targetIndex(steps, i, step.next);
      if (w.status !== 'enabled') return await go('skipped', next, { webhook_id: w.id, reason: 'webhook is disabled' });
      const d = await insertTestDelivery(tx, {
        webhookId: w.id,
        orgId: run.org_id,
        eventId: newId('evt'),
        eventType: AUTOMATION_WEBHOOK_EVENT,
        body: webhookBody(run, i, step, contact, step.webhook.payload),
      });
      return await go(
        'queued',
        next,
        { webhook_id: w.id, delivery_id: d.id },
        { delivery: { id: d.id, webhookId: w.id } },
      );
    }
    const emailId = await sendStep(tx, run, contact, step.send);
    return await go('sent', targetIndex(steps, i, step.next), { email_id: emailId }, { emailId, orgId: run.org_id });
  } catch (err) {
    if (!(err instanceof StepFailure)) throw err;
    await recordRunStep(tx, {
      run_id: run.id,
      step: i,
      step_id: step.id ?? null,
      type,
      started_at: startedAt,
      outcome: 'failed',
      next_step: null,
      detail: { error: err.message },
    });
    return await end('failed', { error: err.message });
  }
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
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: opts.concurrency ?? 8, ...TAKEOVER_LOCKS },
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
