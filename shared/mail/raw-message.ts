// The MIME of a message as it was (or would be) handed to the receiving server: what
// GET /emails/{id}/raw and the console's message view show (the development inbox, DESIGN §12).
//
// - `stored`: the exact bytes the delivery worker handed over. Test-mode messages are stored
//   when the worker runs them (composed and DKIM-signed as a live send would be).
// - `recomposed`: composed now by the same code the worker uses (shared/mail/message-renderer.ts):
//   live messages (their bytes are not kept: the content is, and composing is deterministic but
//   for the MIME boundaries), and test messages the worker has not reached yet.
//
// A message is one MIME for all its recipients unless it carries per-recipient content
// (tracking links, one-click unsubscribe); then each recipient has its own copy. Either way the
// envelope differs per recipient (VERP return path), so the envelope is given beside the bytes.
import type { Config } from '../config.js';
import { getDeliveryEmail } from '../db/delivery.js';
import { listRecipients, type RecipientRow } from '../db/emails.js';
import type { Db } from '../db/pool.js';
import { getRawMessage } from '../db/raw-messages.js';
import * as tracker from '../tracking.js';
import { messageRenderer } from './message-renderer.js';
import { verpAddress } from './verp.js';

export interface RawMessage {
  raw: Buffer;
  source: 'stored' | 'recomposed';
  /** Envelope recipients (RCPT TO) of this copy: every recipient, Bcc included, or the one it is for. */
  envelopeTo: string[];
  /** MAIL FROM: a forward's SRS address, else the VERP return path of a one-recipient copy; null when shared. */
  envelopeFrom: string | null;
}

export type RawMessageResult = { ok: true; message: RawMessage } | { ok: false; reason: 'unknown_recipient' | 'gone' };

export interface RawMessageDeps {
  sql: Db;
  config: Pick<Config, 'baseUrl' | 'secretKey' | 'secretKeyPrevious'>;
}

/**
 * The MIME of one message (whose visibility the caller has already checked), for `recipient`
 * (an address of the message) or, without one, the shared copy (else the first recipient's).
 */
export async function readRawMessage(
  deps: RawMessageDeps,
  emailId: string,
  recipient: string | null = null,
): Promise<RawMessageResult> {
  const [email, recipients] = await Promise.all([
    getDeliveryEmail(deps.sql, emailId),
    listRecipients(deps.sql, emailId),
  ]);
  if (!email || recipients.length === 0) return { ok: false, reason: 'gone' };
  let chosen: RecipientRow | null = null;
  if (recipient !== null) {
    chosen = recipients.find((r) => r.email === recipient.trim().toLowerCase()) ?? null;
    if (!chosen) return { ok: false, reason: 'unknown_recipient' };
  }
  const envelope = (raw: Buffer, source: RawMessage['source'], own: RecipientRow | null): RawMessage => {
    const single = own ?? (recipients.length === 1 ? recipients[0]! : null);
    return {
      raw,
      source,
      envelopeTo: single ? [single.email] : recipients.map((r) => r.email),
      envelopeFrom:
        email.envelope_from ?? (single ? verpAddress(single.id, email.domain_name, deps.config.secretKey) : null),
    };
  };
  const stored = await getRawMessage(deps.sql, emailId, chosen?.id ?? null);
  if (stored) {
    const own = chosen ?? recipients.find((r) => r.id === stored.recipient_id) ?? null;
    return { ok: true, message: envelope(stored.raw, 'stored', own) };
  }
  const first = chosen ?? recipients[0]!;
  const renderer = messageRenderer(deps, tracker, email);
  const raw = await renderer.forRecipient(first.id);
  return { ok: true, message: envelope(raw, 'recomposed', chosen ?? (renderer.personal ? first : null)) };
}
