// DSN bounces and ARF complaints that arrived on the VERP return path become email.bounced and
// email.complained events of the recipient the token names (DESIGN §6, §10). Hard bounces and
// complaints on live messages add suppressions.
import { addSuppression } from '../shared/db/suppressions.js';
import {
  findRecipient,
  findRecipientByMessage,
  markRecipientBounced,
  markRecipientComplained,
  type RecipientRef,
} from '../shared/db/inbound.js';
import type { Db } from '../shared/db/pool.js';
import { recordEvents, type BounceType, type EventRow } from '../shared/events.js';
import { classifyReply, parseReply } from '../shared/mail/classify.js';
import type { DsnRecipient, FeedbackReport, OriginalMessage } from '../shared/mail/reports.js';
import { parseVerpAddress } from '../shared/mail/verp.js';

export interface BounceVerdict {
  bounceType: BounceType;
  detail: string;
  blocked: boolean;
}

/**
 * RFC 3464 recipient → bounce type: the reply classifier on the status and diagnostic text. A
 * generic status (Exim and Yahoo write 5.0.0) yields to the remote server's own enhanced code.
 */
export function classifyDsnRecipient(r: DsnRecipient): BounceVerdict {
  if (!r.status) return { bounceType: 'undetermined', detail: 'Undetermined', blocked: false };
  const reply = parseReply(r.diagnostic ?? '');
  const generic = /^[245]\.0\.0$/.test(r.status);
  const enhanced = generic && reply.enhanced?.[0] === r.status[0] ? reply.enhanced : r.status;
  const code = reply.code >= 200 && reply.code < 600 ? reply.code : r.status.startsWith('5') ? 550 : 450;
  const c = classifyReply({ code, enhanced, text: r.diagnostic ?? '' });
  if (r.status.startsWith('4')) {
    // A final failure after the remote MTA's own retries: soft; like exhausted retries of our own
    // delivery it is General, unless the mailbox was full.
    return { bounceType: 'soft', detail: c.detail === 'MailboxFull' ? 'MailboxFull' : 'General', blocked: c.blocked };
  }
  return { bounceType: c.bounceType ?? 'undetermined', detail: c.detail || 'Undetermined', blocked: c.blocked };
}

/**
 * The report entry about `email`: its own entry whatever its action, else (forwarding changed the
 * address) the first failed one. Only a `failed` entry bounces; `null` means the report changes
 * nothing (delayed, delivered, relayed, or another recipient failed while ours is fine).
 */
export function pickDsnEntry(entries: DsnRecipient[], email: string): DsnRecipient | null {
  const addr = email.toLowerCase();
  const own = entries.find(
    (e) => e.finalRecipient?.toLowerCase() === addr || e.originalRecipient?.toLowerCase() === addr,
  );
  const entry = own ?? entries.find((e) => e.action === 'failed') ?? null;
  return entry?.action === 'failed' ? entry : null;
}

function dims(r: RecipientRef) {
  return {
    orgId: r.orgId,
    mode: r.mode,
    emailId: r.emailId,
    recipientId: r.recipientId,
    recipient: r.email,
    domainId: r.domainId,
    keyId: r.keyId,
    templateId: r.templateId,
    kind: r.kind,
    provider: r.provider,
  };
}

/** One DSN for one VERP recipient: the matching report entry, else the first failed one. */
export async function applyDsn(
  tx: Db,
  orgId: string,
  recipientId: string,
  entries: DsnRecipient[],
  inboundId: string,
): Promise<EventRow[]> {
  const r = await findRecipient(tx, recipientId);
  // The token is genuine, but the bounce came in through another organization's domain.
  if (!r || r.orgId !== orgId) return [];
  const mine = pickDsnEntry(entries, r.email);
  // An empty list is a bounce without a report (undetermined); otherwise only a failure counts.
  if (!mine && entries.length > 0) return [];
  const verdict = mine
    ? classifyDsnRecipient(mine)
    : { bounceType: 'undetermined' as const, detail: 'Undetermined', blocked: false };
  const reply = mine?.diagnostic ?? null;
  const rows = await recordEvents(tx, [
    {
      ...dims(r),
      type: 'email.bounced',
      bounceType: verdict.bounceType,
      detail: verdict.detail,
      blocked: verdict.blocked,
      // One bounce per recipient, whether it came in the SMTP reply or later by DSN.
      dedupeKey: `${r.recipientId}:bounced`,
      data: { source: 'dsn', inbound_id: inboundId, status: mine?.status ?? null, diagnostic: reply },
    },
  ]);
  if (rows.length === 0) return [];
  await markRecipientBounced(tx, r.recipientId, reply);
  if (r.mode === 'live' && verdict.bounceType === 'hard') {
    await addSuppression(tx, {
      orgId: r.orgId,
      email: r.email,
      domainId: null,
      reason: 'hard_bounce',
      sourceEmailId: r.emailId,
    });
  }
  return rows;
}

const COMPLAINT_TYPES = new Set(['abuse', 'fraud', 'other']);

/**
 * The recipient an ARF report is about, first match wins: the envelope VERP token; a VERP token
 * in Original-Mail-From or in the returned copy's Return-Path (Microsoft JMRP and AOL redact the
 * recipient); the original Message-ID with Original-Rcpt-To; the Message-ID alone when that
 * message had one recipient. Every candidate must belong to the organization the report came to.
 */
async function complainedRecipient(
  tx: Db,
  orgId: string,
  envelopeRecipientId: string | null,
  report: { feedback: FeedbackReport; original: OriginalMessage },
  secret: string,
): Promise<RecipientRef | null> {
  const tokens = [envelopeRecipientId];
  for (const addr of [report.feedback.originalMailFrom, report.original.returnPath]) {
    tokens.push(addr ? parseVerpAddress(addr, secret) : null);
  }
  for (const id of tokens) {
    const r = id ? await findRecipient(tx, id) : null;
    if (r && r.orgId === orgId) return r;
  }
  const messageId = report.original.messageId;
  if (!messageId) return null;
  const id = await findRecipientByMessage(tx, orgId, messageId, report.feedback.originalRcptTo);
  const r = id ? await findRecipient(tx, id) : null;
  return r && r.orgId === orgId ? r : null;
}

/** An ARF report of a complaint (abuse, fraud, other); not-spam and virus reports change nothing. */
export async function applyArf(
  tx: Db,
  orgId: string,
  envelopeRecipientId: string | null,
  report: { feedback: FeedbackReport; original: OriginalMessage },
  inboundId: string,
  secret: string,
): Promise<EventRow[]> {
  const feedback = report.feedback;
  if (!COMPLAINT_TYPES.has(feedback.feedbackType)) return [];
  const r = await complainedRecipient(tx, orgId, envelopeRecipientId, report, secret);
  if (!r) return [];
  const rows = await recordEvents(tx, [
    {
      ...dims(r),
      type: 'email.complained',
      detail: feedback.feedbackType,
      dedupeKey: `${r.recipientId}:complained`,
      data: { source: 'arf', inbound_id: inboundId, user_agent: feedback.userAgent },
    },
  ]);
  if (rows.length === 0) return [];
  await markRecipientComplained(tx, r.recipientId);
  if (r.mode === 'live') {
    await addSuppression(tx, {
      orgId: r.orgId,
      email: r.email,
      domainId: null,
      reason: 'complaint',
      sourceEmailId: r.emailId,
    });
  }
  return rows;
}
