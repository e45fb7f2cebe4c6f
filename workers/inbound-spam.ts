// The scoring step of the inbound flow (DESIGN §20): with RSPAMD_URL, the stored message is
// scored by rspamd (shared/mail/spam-score.ts) before it is handed on; the verdict goes into the
// stored message and `email.received`, and a route with `spam_threshold` refuses a message
// scored above it. Without RSPAMD_URL: no step, no `spam` field.
import type { InboundRow } from '../shared/db/inbound.js';
import type { RcptRoute } from '../shared/inbound-routing.js';
import { isAbove, scoreMessage, type SpamVerdict } from '../shared/mail/spam-score.js';
import type { WorkerDeps } from './deps.js';

/** rspamd's verdict, or null when no scorer is configured. */
export async function scoreInbound(deps: WorkerDeps, row: InboundRow & { raw: Buffer }): Promise<SpamVerdict | null> {
  const url = deps.config.rspamdUrl;
  if (!url) return null;
  const input = { raw: row.raw, ip: row.remote_address, helo: row.helo, mailFrom: row.mail_from, rcptTo: row.rcpt_to };
  return await scoreMessage(url, input, (reason) =>
    deps.logger.warn(
      { event: 'INBOUND_SPAM_UNCHECKED', inboundId: row.id, reason },
      'rspamd did not score the inbound message; kept unchecked',
    ),
  );
}

/** The recipients whose route takes the message, and why the others refused it (null: none did). */
export function spamFilter(
  spam: SpamVerdict | null,
  rcpts: RcptRoute[],
): { kept: RcptRoute[]; refusal: string | null } {
  const kept = rcpts.filter((r) => !isAbove(spam, r.route?.spam_threshold));
  const refused = rcpts.find((r) => !kept.includes(r));
  if (!refused || !spam || !('score' in spam)) return { kept, refusal: null };
  return {
    kept,
    refusal: `spam score ${spam.score} above the threshold ${refused.route!.spam_threshold} of the route ${refused.route!.match}`,
  };
}
