// Turns a verdict into the recipient's next state and its events, written in one statement
// (batched across the worker's jobs); the caller publishes the events after commit. Dedupe keys
// make a re-run record nothing twice.
import type { DeliveryEmail } from '../../shared/db/delivery.js';
import { recordOutcomes, type Outcome, type OutcomePatch } from '../../shared/db/delivery-attempts.js';
import type { Db } from '../../shared/db/pool.js';
import { MicroBatcher } from '../../shared/micro-batch.js';
import type { EmailEventType, EventRow, NewEvent } from '../../shared/events.js';
import { retryTransient } from '../../shared/transient.js';
import type { WorkerDeps } from '../deps.js';
import { retryDelaySeconds, type Verdict } from './verdict.js';

/** How long a worker keeps an SMTP result it could not write before giving up on it. */
const RESULT_WAIT_MS = 60 * 60_000;

/** Retry delay of simulated test-mode deferrals: a test never waits minutes. */
export const TEST_RETRY_MS = 300;

export interface RecipientRef {
  id: string;
  email: string;
  attempts: number;
  provider: string | null;
}

export function eventOf(
  email: DeliveryEmail,
  r: Pick<RecipientRef, 'id' | 'email' | 'provider'>,
  type: EmailEventType,
  dedupeKey: string,
  extra: Partial<NewEvent> = {},
): NewEvent {
  return {
    orgId: email.org_id,
    mode: email.mode,
    type,
    dedupeKey,
    emailId: email.id,
    recipientId: r.id,
    recipient: r.email,
    domainId: email.domain_id,
    keyId: email.key_id,
    templateId: email.template_id,
    kind: email.kind,
    provider: r.provider,
    ...extra,
  };
}

interface Plan {
  patch: OutcomePatch;
  events: NewEvent[];
  suppress: 'hard_bounce' | 'complaint' | null;
}

/** A deferral past DELIVERY_MAX_AGE_HOURS becomes a soft bounce (General). */
function expire(deps: WorkerDeps, email: DeliveryEmail, v: Verdict, now: Date): Verdict {
  if (v.kind !== 'deferred' || email.mode === 'test') return v;
  const maxAgeMs = deps.config.deliveryMaxAgeHours * 3_600_000;
  // A scheduled message ages from its scheduled time, not from when the API stored it.
  const start = (email.scheduled_at ?? email.created_at).getTime();
  if (now.getTime() - start < maxAgeMs) return v;
  return {
    kind: 'bounced',
    response: v.response,
    bounceType: 'soft',
    detail: 'General',
    blocked: v.blocked,
    via: v.via,
  };
}

/**
 * What the attempt behind an outcome was (the console's timeline shows it): its number, the reply,
 * the host that answered and its TLS (`{version, cipher, policy, mode}`). Kept in the event's
 * `data`, which webhook payloads do not carry.
 */
export function attemptData(r: RecipientRef, v: Verdict): Record<string, unknown> {
  return {
    attempt: r.attempts,
    response: v.response,
    ...(v.via?.host ? { mx_host: v.via.host } : {}),
    ...(v.via?.tls ? { tls: v.via.tls } : {}),
  };
}

function plan(deps: WorkerDeps, email: DeliveryEmail, r: RecipientRef, verdict: Verdict, now: Date): Plan {
  const v = expire(deps, email, verdict, now);
  const base = {
    waitReason: null,
    nextAttemptAt: null,
    lastResponse: v.response,
    provider: r.provider,
    tls: v.via?.tls ?? null,
  };
  const data = attemptData(r, v);
  const ev = (type: EmailEventType, key: string, extra: Partial<NewEvent> = {}) =>
    eventOf(email, r, type, `${r.id}:${key}`, { data, ...extra });
  switch (v.kind) {
    case 'delivered': {
      const events = [ev('email.delivered', 'delivered')];
      if (v.complained) events.push(ev('email.complained', 'complained', { data: {} }));
      const last = v.complained ? 'email.complained' : 'email.delivered';
      const patch = {
        ...base,
        status: 'delivered' as const,
        lastEvent: last,
        delivered: true,
        complained: v.complained,
      };
      return { patch, events, suppress: v.complained && email.mode === 'live' ? 'complaint' : null };
    }
    case 'deferred': {
      const ms =
        email.mode === 'test'
          ? TEST_RETRY_MS
          : (v.retryInSeconds ?? retryDelaySeconds(deps.config.deliveryRetrySeconds, r.attempts)) * 1000;
      const at = new Date(now.getTime() + ms);
      const patch = {
        ...base,
        status: 'delivery_delayed' as const,
        lastEvent: 'email.delivery_delayed',
        nextAttemptAt: at,
        waitReason: `retry at ${at.toISOString()} after: ${v.response}`.slice(0, 1000),
      };
      const event = ev('email.delivery_delayed', `delayed:${r.attempts}`, { detail: v.detail, blocked: v.blocked });
      return { patch, events: [event], suppress: null };
    }
    case 'bounced': {
      const patch = { ...base, status: 'bounced' as const, lastEvent: 'email.bounced' };
      const event = ev('email.bounced', 'bounced', { bounceType: v.bounceType, detail: v.detail, blocked: v.blocked });
      return {
        patch,
        events: [event],
        suppress: v.bounceType === 'hard' && email.mode === 'live' ? 'hard_bounce' : null,
      };
    }
    case 'rejected':
    case 'failed': {
      const type = v.kind === 'rejected' ? 'email.rejected' : 'email.failed';
      const patch = { ...base, status: v.kind, lastEvent: type };
      return { patch, events: [ev(type, v.kind, { detail: v.detail })], suppress: null };
    }
  }
}

/**
 * A recipient's verdict as an outcome row (its next state, its events, any suppression) for
 * `recordOutcomes`; `planned` are the events as planned (a re-run creates none: dedupe keys).
 */
export function outcomeOf(
  deps: WorkerDeps,
  email: DeliveryEmail,
  r: RecipientRef,
  verdict: Verdict,
): { outcome: Outcome; planned: NewEvent[] } {
  const p = plan(deps, email, r, verdict, new Date());
  const outcome: Outcome = {
    recipientId: r.id,
    emailId: email.id,
    patch: p.patch,
    events: p.events,
    // Org-wide: a bad address is bad whichever of the org's domains sends to it.
    suppression: p.suppress
      ? { orgId: email.org_id, email: r.email, domainId: null, reason: p.suppress, sourceEmailId: email.id }
      : null,
  };
  return { outcome, planned: p.events };
}

/**
 * Records outcomes of many jobs' recipients in one statement per batch (each its own commit as
 * far as its job can tell: the job waits for the batch). A recipient is never twice in a batch.
 */
export class OutcomeRecorder {
  private readonly batcher: MicroBatcher<Outcome, EventRow[]>;

  constructor(db: Db) {
    this.batcher = new MicroBatcher((items) => recordOutcomes(db, items), { keyOf: (o) => o.recipientId });
  }

  /** Records one recipient's outcome; resolves with the events it created once committed. */
  record(outcome: Outcome): Promise<EventRow[]> {
    return this.batcher.add(outcome);
  }
}

/**
 * Records one recipient's verdict; the created events' ids go to `outbox` (published by the
 * caller after the job's writes). Returns the events as planned.
 */
export async function recordVerdict(
  deps: WorkerDeps,
  recorder: OutcomeRecorder,
  email: DeliveryEmail,
  r: RecipientRef,
  verdict: Verdict,
  outbox: string[],
): Promise<NewEvent[]> {
  const { outcome, planned } = outcomeOf(deps, email, r, verdict);
  // The result is the one write that must not be lost: a 250 not recorded is sent again by
  // whoever takes the attempt over. Through an outage of Postgres it is kept and written as
  // soon as Postgres answers again (the attempt's lease is renewed meanwhile, from the same
  // process, once Postgres is back).
  const created = await retryTransient(() => recorder.record(outcome), {
    maxMs: RESULT_WAIT_MS,
    onWait: (err) =>
      deps.logger.warn(
        { event: 'DELIVERY_RESULT_WAITING', emailId: email.id, recipientId: r.id, err },
        'result kept until Postgres answers',
      ),
  });
  outbox.push(...created.map((e) => e.id));
  return planned;
}
