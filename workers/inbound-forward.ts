// Forward routes (docs/inbound.md "Forwarding"): the received message goes out again through
// Tern's own delivery, as one email (`source` and `kind` "forward", tagged with its inbound id) to
// the routes' forward_to addresses. The bytes are the message as received with a Received and an
// X-Tern-Forwarded field on top (the domain's DKIM signature is added at delivery, as for relay
// messages); the envelope sender is the SRS address of the original sender on bounces.<domain>
// (SRS1 when the sender is already an SRS address: shared/mail/srs.ts), so SPF holds at the
// destination and a bounce comes back to this MX. A message that already carries
// MAX_FORWARD_HOPS X-Tern-Forwarded fields is looping between forwards and is not sent again, and
// a null-sender message (a bounce, an auto-reply) is never forwarded.
import type { ParsedMail } from 'mailparser';
import { insertEmails, type NewRecipient } from '../shared/db/emails.js';
import type { InboundRow } from '../shared/db/inbound.js';
import type { Db } from '../shared/db/pool.js';
import { bounceHost } from '../shared/domains/records.js';
import { buildEmailRow } from '../shared/email-row.js';
import { newId } from '../shared/ids.js';
import type { RcptRoute } from '../shared/inbound-routing.js';
import { formatMailbox, parseAddress } from '../shared/mail/addresses.js';
import { srsAddress } from '../shared/mail/srs.js';
import type { WorkerDeps } from './deps.js';

export const MAX_FORWARD_HOPS = 5;
export const FORWARD_HEADER = 'X-Tern-Forwarded';

export type ForwardOutcome = { emailId: string; error: null } | { emailId: null; error: string };

export interface ForwardFields {
  fromAddress: string | null;
  subject: string | null;
  text: string | null;
  html: string | null;
  messageId: string | null;
}

function hops(mail: ParsedMail): number {
  return mail.headerLines.filter((h) => h.key === FORWARD_HEADER.toLowerCase()).length;
}

/** The original envelope sender: MAIL FROM at the MX; the intake's X-Tern-Mail-From, else From. */
function originalSender(row: InboundRow, fields: ForwardFields): string | null {
  if (row.source === 'mx') return row.mail_from || null;
  return row.mail_from || fields.fromAddress;
}

/** The From of the stored email: the header's mailbox as written, else the envelope sender. */
function fromOf(mail: ParsedMail, sender: string): { address: string; email: string } {
  const first = mail.from?.value[0];
  const parsed = first?.address ? parseAddress(first.address) : null;
  if (parsed?.ok) {
    return { address: formatMailbox({ ...parsed.mailbox, name: first?.name || null }), email: parsed.mailbox.email };
  }
  return { address: sender, email: sender.toLowerCase() };
}

function traceFields(deps: WorkerDeps, row: InboundRow): Buffer {
  const from = row.helo ? `${row.helo}${row.remote_address ? ` ([${row.remote_address}])` : ''}` : 'unknown';
  const lines = [
    `Received: from ${from}\r\n\tby ${deps.config.mxHost} (Tern) with ESMTP id ${row.id};\r\n\t${new Date().toUTCString()}`,
    `${FORWARD_HEADER}: ${row.id}`,
  ];
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'latin1');
}

/**
 * Stores the forwarded copy (in the caller's transaction); the caller enqueues its delivery after
 * the commit. `rcpts` are the recipients whose route forwards (their domain sends the copy).
 */
export async function createForward(
  tx: Db,
  deps: WorkerDeps,
  row: InboundRow & { raw: Buffer; org_id: string },
  mail: ParsedMail,
  fields: ForwardFields,
  rcpts: RcptRoute[],
): Promise<ForwardOutcome> {
  if (hops(mail) >= MAX_FORWARD_HOPS) {
    deps.logger.warn({ event: 'INBOUND_FORWARD_LOOP', inboundId: row.id }, 'forwarding loop: not forwarded');
    return { emailId: null, error: `not forwarded: already forwarded ${hops(mail)} times (a forwarding loop)` };
  }
  const sender = originalSender(row, fields);
  if (!sender) return { emailId: null, error: 'not forwarded: a message with a null sender (a bounce or auto-reply)' };
  const parsedSender = parseAddress(sender);
  if (!parsedSender.ok) {
    deps.logger.warn(
      { event: 'INBOUND_FORWARD_BAD_SENDER', inboundId: row.id },
      'sender not an address: not forwarded',
    );
    return { emailId: null, error: `not forwarded: the envelope sender ${parsedSender.reason}`.slice(0, 300) };
  }
  const domain = { id: rcpts[0]!.domainId, name: rcpts[0]!.domainName };
  const targets = [...new Set(rcpts.map((r) => r.route!.forward_to!))];
  const id = newId('em');
  const email = buildEmailRow({
    id,
    orgId: row.org_id,
    keyId: null,
    mode: 'live',
    domain,
    source: 'forward',
    from: fromOf(mail, parsedSender.mailbox.address),
    to: targets,
    subject: fields.subject ?? '',
    html: fields.html,
    text: fields.text,
    kind: 'forward',
    tags: [{ name: 'inbound_id', value: row.id }],
    ...(fields.messageId ? { messageId: fields.messageId } : {}),
    rawMime: Buffer.concat([traceFields(deps, row), row.raw]),
    envelopeFrom: srsAddress(parsedSender.mailbox.address, bounceHost(domain.name), deps.config.secretKey),
  });
  const recipients: NewRecipient[] = targets.map((address) => ({
    id: newId('rcp'),
    email_id: id,
    org_id: row.org_id,
    field: 'to',
    address,
    email: address,
    domain: address.slice(address.lastIndexOf('@') + 1),
    status: 'queued',
    wait_reason: null,
  }));
  await insertEmails(tx, [email], recipients, []);
  return { emailId: id, error: null };
}
