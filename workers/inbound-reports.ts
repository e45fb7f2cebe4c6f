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
import { classifyReply } from '../shared/mail/classify.js';
import type { DsnRecipient, FeedbackReport } from '../shared/mail/reports.js';

export interface BounceVerdict {
  bounceType: BounceType;
  detail: string;
  blocked: boolean;
}

/** RFC 3464 recipient → bounce type: the reply classifier on the status and diagnostic text. */
export function classifyDsnRecipient(r: DsnRecipient): BounceVerdict {
  if (!r.status) return { bounceType: 'undetermined', detail: 'Undetermined', blocked: false };
  const code = Number(/^\s*([245]\d\d)\b/.exec(r.diagnostic ?? '')?.[1] ?? (r.status.startsWith('5') ? 550 : 450));
  const c = classifyReply({ code, enhanced: r.status, text: r.diagnostic ?? '' });
  if (r.status.startsWith('4')) {
    // A final failure after the remote MTA's own retries: soft, with the delay type as detail.
    return { bounceType: 'soft', detail: c.detail || 'General', blocked: c.blocked };
  }
  return { bounceType: c.bounceType ?? 'undetermined', detail: c.detail || 'Undetermined', blocked: c.blocked };
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
  recipientId: string,
  entries: DsnRecipient[],
  inboundId: string,
): Promise<EventRow[]> {
  const r = await findRecipient(tx, recipientId);
  if (!r) return [];
  const failed = entries.filter((e) => e.action === 'failed');
  const mine =
    failed.find((e) => (e.finalRecipient ?? e.originalRecipient ?? '').toLowerCase() === r.email) ?? failed[0];
  if (!mine && entries.length > 0) return []; // delayed / delivered / relayed notices change nothing
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

/** An ARF report: the VERP recipient, else the original Message-ID and Original-Rcpt-To. */
export async function applyArf(
  tx: Db,
  orgId: string,
  recipientId: string | null,
  feedback: FeedbackReport,
  originalMessageId: string | null,
  inboundId: string,
): Promise<EventRow[]> {
  if (!COMPLAINT_TYPES.has(feedback.feedbackType)) return [];
  let id = recipientId;
  if (!id && originalMessageId && feedback.originalRcptTo) {
    id = await findRecipientByMessage(tx, orgId, originalMessageId, feedback.originalRcptTo);
  }
  const r = id ? await findRecipient(tx, id) : null;
  if (!r || r.orgId !== orgId) return [];
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
