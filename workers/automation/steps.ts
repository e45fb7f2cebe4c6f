// The steps of an automation run, one function each (Postal's outgoing message processor is the
// model): each takes the run, its contact and its step, does the step's work in the run's
// transaction, and answers what follows as data (a StepResult); runStep in workers/automation.ts
// writes it: the run's history row, its move to the next step or its hold, or its end.
import { buildContactEmail } from '../../shared/contact-email.js';
import { conditionHolds, type runContact, type RunRow } from '../../shared/db/automations.js';
import { updateContact } from '../../shared/db/contacts.js';
import { getOrgDomain } from '../../shared/db/domains.js';
import { insertEmails } from '../../shared/db/emails.js';
import type { TxSql } from '../../shared/db/pool.js';
import { findSegments, setSegmentMember, type SegmentRow } from '../../shared/db/segments.js';
import { findTemplateVersion } from '../../shared/db/templates.js';
import { insertTestDelivery } from '../../shared/db/webhook-deliveries.js';
import { getWebhook } from '../../shared/db/webhooks.js';
import { demoDomainMessage } from '../../shared/domains/demo.js';
import {
  AUTOMATION_WEBHOOK_EVENT,
  targetIndex,
  type AutomationStep,
  type Condition,
} from '../../shared/automation-steps.js';
import { parseWait } from '../../shared/durations.js';
import { newId } from '../../shared/ids.js';
import { parseMailbox } from '../../shared/mail/addresses.js';

export type Contact = NonNullable<Awaited<ReturnType<typeof runContact>>>;

export interface SideEffects {
  emailId?: string;
  /** The organization of the email sent (its delivery job's fair share). */
  orgId?: string;
  delivery?: { id: string; webhookId: string };
}

/** What a step decided. */
export type StepResult =
  /** Done: recorded with `outcome` and `detail`, the run moves to `target` (steps.length: the end). */
  | { kind: 'go'; outcome: string; target: number; detail: Record<string, unknown>; effects: SideEffects }
  /** Entering a step that lasts (a wait): due again in `ms`. */
  | { kind: 'hold'; ms: number; waitingFor: string | null }
  /** Woken before the step is due (a sweep, a duplicate job): sleep again until then. */
  | { kind: 'sleep'; ms: number; suffix: string }
  /** The step cannot be done (a template unpublished, a segment deleted): the run fails. */
  | { kind: 'failed'; error: string };

/** What a step works on: the run (locked), its contact, and the time the step is taken. */
export interface StepContext {
  tx: TxSql;
  run: RunRow;
  contact: Contact;
  now: Date;
}

type StepOf<K extends string> = Extract<AutomationStep, Record<K, unknown>>;

/** A step that waits is due again within this much of its time (timer skew). */
const EARLY_MS = 50;

function go(
  c: StepContext,
  outcome: string,
  target: string | undefined,
  detail: Record<string, unknown> = {},
  effects: SideEffects = {},
): StepResult {
  return { kind: 'go', outcome, target: targetIndex(c.run.steps, c.run.step, target), detail, effects };
}

function early(c: StepContext): StepResult | null {
  const due = c.run.next_at?.getTime() ?? 0;
  const ms = due - c.now.getTime();
  return ms > EARLY_MS ? { kind: 'sleep', ms, suffix: `-due-${c.now.getTime()}` } : null;
}

/** Thrown by a step's work: the run fails with its message. */
class StepFailure extends Error {}

/** A send step: one message to the run's contact, stored like POST /emails stores it. */
async function sendStep(tx: TxSql, run: RunRow, contact: Contact, s: StepOf<'send'>['send']): Promise<string> {
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

async function waitStep(c: StepContext, step: StepOf<'wait'>): Promise<StepResult> {
  if (c.run.step_started_at === null) return { kind: 'hold', ms: parseWait(step.wait) ?? 0, waitingFor: null };
  return early(c) ?? go(c, 'waited', step.next);
}

async function waitForEventStep(c: StepContext, step: StepOf<'wait_for_event'>): Promise<StepResult> {
  const w = step.wait_for_event;
  if (c.run.step_started_at === null) return { kind: 'hold', ms: parseWait(w.timeout) ?? 0, waitingFor: w.event };
  if (c.run.awaited_event_id) return go(c, 'event_received', step.next, { event_id: c.run.awaited_event_id });
  return early(c) ?? go(c, 'timed_out', step.on_timeout);
}

async function conditionStep(c: StepContext, step: StepOf<'condition'>): Promise<StepResult> {
  const segments = await segmentsOf(c.tx, c.run.org_id, conditionSegments(step.condition));
  const ok = await conditionHolds(c.tx, c.run, step.condition, segments);
  return go(c, ok ? 'true' : 'false', ok ? step.then : step.else);
}

async function updateContactStep(c: StepContext, step: StepOf<'update_contact'>): Promise<StepResult> {
  const u = step.update_contact;
  await updateContact(c.tx, c.run.org_id, c.contact.id, {
    firstName: u.first_name,
    lastName: u.last_name,
    properties: u.properties,
  });
  return go(c, 'updated', step.next, { fields: Object.keys(u) });
}

async function segmentStep(
  c: StepContext,
  step: StepOf<'add_to_segment'> | StepOf<'remove_from_segment'>,
  add: boolean,
  id: string,
): Promise<StepResult> {
  await segmentsOf(c.tx, c.run.org_id, new Set([id]));
  await setSegmentMember(c.tx, id, c.contact.id, add);
  return go(c, add ? 'added' : 'removed', step.next, { segment_id: id });
}

async function webhookStep(c: StepContext, step: StepOf<'webhook'>): Promise<StepResult> {
  const w = await getWebhook(c.tx, c.run.org_id, step.webhook.webhook_id);
  if (!w) throw new StepFailure(`webhook ${step.webhook.webhook_id} no longer exists`);
  if (w.status !== 'enabled') return go(c, 'skipped', step.next, { webhook_id: w.id, reason: 'webhook is disabled' });
  const d = await insertTestDelivery(c.tx, {
    webhookId: w.id,
    orgId: c.run.org_id,
    eventId: newId('evt'),
    eventType: AUTOMATION_WEBHOOK_EVENT,
    body: webhookBody(c.run, c.run.step, step, c.contact, step.webhook.payload),
  });
  return go(
    c,
    'queued',
    step.next,
    { webhook_id: w.id, delivery_id: d.id },
    { delivery: { id: d.id, webhookId: w.id } },
  );
}

async function sendEmailStep(c: StepContext, step: StepOf<'send'>): Promise<StepResult> {
  const emailId = await sendStep(c.tx, c.run, c.contact, step.send);
  return go(c, 'sent', step.next, { email_id: emailId }, { emailId, orgId: c.run.org_id });
}

/** Takes the run's step: its work, and what follows. */
export async function takeStep(c: StepContext, step: AutomationStep): Promise<StepResult> {
  try {
    if ('wait' in step) return await waitStep(c, step);
    if ('wait_for_event' in step) return await waitForEventStep(c, step);
    if ('condition' in step) return await conditionStep(c, step);
    if ('update_contact' in step) return await updateContactStep(c, step);
    if ('add_to_segment' in step) return await segmentStep(c, step, true, step.add_to_segment);
    if ('remove_from_segment' in step) return await segmentStep(c, step, false, step.remove_from_segment);
    if ('webhook' in step) return await webhookStep(c, step);
    return await sendEmailStep(c, step);
  } catch (err) {
    if (!(err instanceof StepFailure)) throw err;
    return { kind: 'failed', error: err.message };
  }
}
