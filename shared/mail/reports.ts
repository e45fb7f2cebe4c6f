// Machine-readable reports that arrive by mail: delivery status notifications (RFC 3464,
// multipart/report; report-type=delivery-status, also the RFC 6533 global form) and abuse
// feedback reports (RFC 5965 ARF, report-type=feedback-report).
import type { ParsedMail } from 'mailparser';

/** Parses a block of header-style fields (RFC 822 syntax, folded lines allowed). */
export function parseFieldBlock(block: string): Record<string, string> {
  const fields: Record<string, string> = {};
  let last: string | null = null;
  for (const line of block.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && last) {
      fields[last] += ` ${line.trim()}`;
      continue;
    }
    const m = /^([A-Za-z0-9-]+)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    last = m[1]!.toLowerCase();
    // The first occurrence wins (reports repeat nothing that matters).
    if (!(last in fields)) fields[last] = m[2]!.trim();
    else last = null;
  }
  return fields;
}

export interface DsnRecipient {
  finalRecipient: string | null;
  originalRecipient: string | null;
  action: string | null;
  /** RFC 3463 status, e.g. 5.1.1 */
  status: string | null;
  /** The remote server's reply, without the "smtp;" type. */
  diagnostic: string | null;
  remoteMta: string | null;
}

/** `rfc822; user@example.com` → `user@example.com` (address types other than rfc822/utf-8 kept raw). */
function typedAddress(value: string | undefined): string | null {
  if (!value) return null;
  const m = /^\s*(?:rfc822|utf-8)\s*;\s*(.+)$/i.exec(value);
  const addr = (m ? m[1]! : value).trim().replace(/^<|>$/g, '');
  return addr || null;
}

function typedText(value: string | undefined): string | null {
  if (!value) return null;
  const m = /^\s*[A-Za-z0-9-]+\s*;\s*(.*)$/.exec(value);
  return (m ? m[1]! : value).trim() || null;
}

export function parseDeliveryStatus(text: string): DsnRecipient[] {
  const blocks = text
    .replace(/\r\n/g, '\n')
    .split(/\n[ \t]*\n/)
    .filter((b) => b.trim() !== '');
  // The first block is per-message; each later block is one recipient.
  return blocks
    .slice(1)
    .map((block) => {
      const f = parseFieldBlock(block);
      const status = /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(f['status'] ?? '')?.[1] ?? null;
      return {
        finalRecipient: typedAddress(f['final-recipient']),
        originalRecipient: typedAddress(f['original-recipient']),
        action: f['action']?.toLowerCase().trim() ?? null,
        status,
        diagnostic: typedText(f['diagnostic-code']),
        remoteMta: typedText(f['remote-mta']),
      };
    })
    .filter((r) => r.finalRecipient !== null || r.originalRecipient !== null);
}

export interface FeedbackReport {
  feedbackType: string;
  userAgent: string | null;
  originalMailFrom: string | null;
  originalRcptTo: string | null;
  reportedDomain: string | null;
  sourceIp: string | null;
  arrivalDate: string | null;
}

export function parseFeedbackReport(text: string): FeedbackReport {
  const f = parseFieldBlock(text);
  const addr = (v: string | undefined) => (v ? v.trim().replace(/^<|>$/g, '') || null : null);
  return {
    feedbackType: (f['feedback-type'] ?? 'other').toLowerCase(),
    userAgent: f['user-agent'] ?? null,
    originalMailFrom: addr(f['original-mail-from']),
    originalRcptTo: addr(f['original-rcpt-to']),
    reportedDomain: f['reported-domain'] ?? null,
    sourceIp: f['source-ip'] ?? null,
    arrivalDate: f['arrival-date'] ?? f['received-date'] ?? null,
  };
}

export type MailReport =
  | { kind: 'dsn'; recipients: DsnRecipient[]; originalMessageId: string | null }
  | { kind: 'arf'; feedback: FeedbackReport; originalMessageId: string | null };

function contentText(a: { content: Buffer | string }): string {
  return typeof a.content === 'string' ? a.content : a.content.toString('utf8');
}

/** The Message-ID of the returned original (message/rfc822 or text/rfc822-headers part). */
function originalMessageId(mail: ParsedMail): string | null {
  for (const a of mail.attachments) {
    const type = a.contentType.toLowerCase();
    if (
      type === 'message/rfc822' ||
      type === 'text/rfc822-headers' ||
      type === 'message/global' ||
      type === 'message/global-headers'
    ) {
      const head = contentText(a).split(/\r?\n\r?\n/, 1)[0] ?? '';
      const id = parseFieldBlock(head)['message-id'];
      const m = id ? /<([^<>\s]+)>/.exec(id) : null;
      if (m) return m[1]!;
      if (id) return id.trim();
    }
  }
  return null;
}

/** Recognises a DSN or an ARF report in a parsed message; null for anything else. */
export function detectReport(mail: ParsedMail): MailReport | null {
  for (const a of mail.attachments) {
    const type = a.contentType.toLowerCase();
    if (type === 'message/delivery-status' || type === 'message/global-delivery-status') {
      return {
        kind: 'dsn',
        recipients: parseDeliveryStatus(contentText(a)),
        originalMessageId: originalMessageId(mail),
      };
    }
    if (type === 'message/feedback-report') {
      return { kind: 'arf', feedback: parseFeedbackReport(contentText(a)), originalMessageId: originalMessageId(mail) };
    }
  }
  return null;
}

/** Auto-replies (RFC 3834 Auto-Submitted, vendor headers, out-of-office subjects). */
export function isAutoReply(mail: ParsedMail): boolean {
  const h = mail.headers;
  const get = (name: string): string => {
    const v = h.get(name);
    return typeof v === 'string' ? v.toLowerCase() : v === undefined ? '' : JSON.stringify(v).toLowerCase();
  };
  const auto = get('auto-submitted');
  if (auto && !auto.startsWith('no')) return true;
  if (h.has('x-autoreply') || h.has('x-autorespond') || h.has('x-autoreply-from') || h.has('x-mail-autoreply'))
    return true;
  if (/^(auto_reply|auto-reply)$/.test(get('precedence').trim())) return true;
  const subject = (mail.subject ?? '').toLowerCase();
  return /^(auto(matic)?[ -]?(reply|response)|out of (the )?office|abwesenheitsnotiz|réponse automatique)\b/.test(
    subject,
  );
}
