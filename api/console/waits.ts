// Why a recipient waits, in plain words. The delivery worker records the reason as a short
// machine-made sentence in email_recipients.wait_reason (docs/delivery.md "Why a recipient
// waits"): "scheduled for T", "sending paused", "over daily cap until T", "retry at T after: R".
// This turns each into what an operator needs to read, with T in the viewer's time zone.
import { html, when, type Safe } from './html.js';

export interface WaitFacts {
  status: string;
  wait_reason: string | null;
  next_attempt_at: Date | null;
  attempt_started_at: Date | null;
  attempts: number;
}

export interface OrgPause {
  paused: boolean;
  reason: string | null;
}

const ISO = String.raw`(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)`;
const RETRY = new RegExp(`^retry at ${ISO} after: ([^]*)$`);
const SCHEDULED = new RegExp(`^scheduled for ${ISO}$`);
const CAP = new RegExp(`^over daily cap until ${ISO}$`);
const THROTTLED = /^provider (\S+) throttled/;

function retry(at: Date, reply: string): Safe {
  const throttled = THROTTLED.exec(reply);
  if (throttled) {
    return html`Retry at ${when(at)}: Tern is pacing ${throttled[1]} (its sending rate was lowered after a throttle
    reply), not the receiver refusing.`;
  }
  if (reply.startsWith('provider pacing unavailable')) {
    return html`Retry at ${when(at)}: Tern's pacing store (Redis) did not answer; nothing was sent.`;
  }
  return html`Retry at ${when(at)} after <code>${reply}</code>`;
}

function paused(org: OrgPause, next: Date | null): Safe {
  if (org.paused) {
    return html`Held: organization paused${org.reason ? html`: ${org.reason}` : ''}. It goes out once sending resumes.`;
  }
  return html`Held while sending was paused; sending has resumed and it goes out at the next
  check${next ? html` (${when(next)})` : ''}.`;
}

/** The sentence for a recipient that still waits; null once it reached an end state. */
export function explainWait(r: WaitFacts, org: OrgPause): Safe | null {
  const reason = r.wait_reason ?? '';
  let m: RegExpExecArray | null;
  if (r.status === 'scheduled') {
    m = SCHEDULED.exec(reason);
    return m ? html`Scheduled for ${when(new Date(m[1]!))}.` : html`Scheduled.`;
  }
  if (r.status === 'queued') {
    if (reason === 'sending paused') return paused(org, r.next_attempt_at);
    if ((m = CAP.exec(reason))) {
      return html`Waiting for tomorrow's cap: today's daily sending cap (or the domain's warm-up) is used up; it goes
      out after ${when(new Date(m[1]!))}.`;
    }
    if (reason) return html`${reason}`;
    return html`Waiting for a delivery worker to pick it up.`;
  }
  if (r.status === 'sent') {
    return r.attempt_started_at
      ? html`Being delivered now (attempt ${r.attempts}, started ${when(r.attempt_started_at)}).`
      : html`Handed to delivery; waiting for the receiving server's answer.`;
  }
  if (r.status === 'delivery_delayed') {
    if ((m = RETRY.exec(reason))) return retry(new Date(m[1]!), m[2]!.trim());
    if (reason.startsWith('retry requested in the console')) {
      return html`Retry requested in the console; a delivery worker takes it now.`;
    }
    if (reason) return html`${reason}`;
    return r.next_attempt_at ? html`Retry at ${when(r.next_attempt_at)}.` : html`Waiting for its next attempt.`;
  }
  return null;
}
