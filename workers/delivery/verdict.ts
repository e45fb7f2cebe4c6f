// What one attempt on one recipient came to, whatever produced it (SMTP or the test-mode
// simulation), and how that becomes the recipient's next state.
import type { BounceType } from '../../shared/events.js';
import type { AttemptResult, TlsFacts } from '../../shared/mail/outbound/types.js';

/** Where an SMTP attempt went: the host that answered and the attempt's TLS. */
export interface Via {
  host: string | null;
  tls: TlsFacts | null;
}

export type Verdict = (
  | { kind: 'delivered'; response: string; complained?: boolean }
  | {
      kind: 'deferred';
      response: string;
      detail: string;
      blocked: boolean;
      throttle: boolean;
      /** Overrides the retry schedule (a local fault: retried soon). */
      retryInSeconds?: number;
    }
  | { kind: 'bounced'; response: string; bounceType: BounceType; detail: string; blocked: boolean }
  | { kind: 'rejected'; response: string; detail: string }
  | { kind: 'failed'; response: string; detail: string }
) & { via?: Via };

export function fromAttempt(r: AttemptResult): Verdict {
  const c = r.classification;
  const via: Via = { host: r.hostName ?? r.host, tls: r.tls ?? null };
  if (r.kind === 'delivered') return { kind: 'delivered', response: r.response, via };
  if (r.kind === 'deferred') {
    return { kind: 'deferred', response: r.response, detail: c.detail, blocked: c.blocked, throttle: c.throttle, via };
  }
  return {
    kind: 'bounced',
    response: r.response,
    bounceType: c.bounceType ?? 'undetermined',
    detail: c.detail,
    blocked: c.blocked,
    via,
  };
}

/** DESIGN §6 test mode: the outcome of attempt `attempt` (1-based) for a recipient's local part. */
export function simulate(address: string, attempt: number): Verdict {
  const local = address.split('@')[0]!.toLowerCase();
  const ok: Verdict = { kind: 'delivered', response: '250 2.0.0 OK (test mode)' };
  const delayed: Verdict = {
    kind: 'deferred',
    response: '451 4.4.1 simulated delay (test mode)',
    detail: 'TransientCommunicationFailure',
    blocked: false,
    throttle: false,
  };
  if (local.startsWith('softbounced')) {
    if (attempt <= 1) return delayed;
    return {
      kind: 'bounced',
      response: '451 4.4.1 simulated delay, retries exhausted (test mode)',
      bounceType: 'soft',
      detail: 'General',
      blocked: false,
    };
  }
  if (local.startsWith('bounced')) {
    return {
      kind: 'bounced',
      response: '550 5.1.1 simulated unknown user (test mode)',
      bounceType: 'hard',
      detail: 'NoEmail',
      blocked: false,
    };
  }
  if (local.startsWith('complained')) return { ...ok, complained: true };
  if (local.startsWith('delayed')) return attempt <= 1 ? delayed : ok;
  if (local.startsWith('rejected')) {
    return { kind: 'rejected', response: '550 5.7.1 simulated rejection (test mode)', detail: 'Suppressed' };
  }
  return ok;
}

/** Seconds to wait before attempt `attempts + 1`: the schedule's entry, the last one repeating. */
export function retryDelaySeconds(schedule: number[], attempts: number): number {
  return schedule[Math.min(Math.max(attempts - 1, 0), schedule.length - 1)] ?? 60;
}
