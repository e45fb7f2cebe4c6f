// Label values shared by the processes that record metrics (shared/prom/recorder.ts).
import { defaultStream, type Stream } from '../streams.js';

/** Where an accepted email came from (tern_emails_accepted_total's `source`). */
export type AcceptSource = 'api' | 'batch' | 'relay' | 'broadcast' | 'automation' | 'forward' | 'system';

/** An email's `source` column (shared/db/emails.ts): the relay's is `smtp`, a batch's `api`. */
export type EmailSource = 'api' | 'smtp' | 'broadcast' | 'automation' | 'forward' | 'system';

export type { Stream } from '../streams.js';

/**
 * The default delivery stream of a source (shared/streams.ts), for counters recorded where the
 * message's own stream is not at hand; a sender may ask for the other stream.
 */
export function streamOf(source: AcceptSource | EmailSource): Stream {
  return defaultStream(source);
}

/** `4xx` or `5xx`: the class of an SMTP reply code (tern_smtp_refusals_total's `class`). */
export function replyClass(code: number): string {
  return `${Math.floor(code / 100)}xx`;
}
