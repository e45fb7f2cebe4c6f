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

/** What a report tells about the returned original: its Message-ID and its envelope sender. */
export interface OriginalMessage {
  messageId: string | null;
  /** The Return-Path of the returned copy: Tern's VERP address when the reporter kept it. */
  returnPath: string | null;
}

export type MailReport =
  | { kind: 'dsn'; recipients: DsnRecipient[]; original: OriginalMessage }
  | { kind: 'arf'; feedback: FeedbackReport; original: OriginalMessage };

const ORIGINAL_TYPES = new Set(['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers']);
const MAX_PARTS = 50;

function contentText(a: { content: Buffer | string }): string {
  return typeof a.content === 'string' ? a.content : a.content.toString('utf8');
}

function decodeQuotedPrintable(body: string): string {
  const bytes = body
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/**
 * The top-level parts of a multipart/report, straight from the raw message. mailparser folds an
 * inline message/rfc822 part (Yahoo, AOL and Microsoft feedback reports) into the body, so the
 * returned original is looked up here, not among mailparser's attachments.
 */
export function reportParts(raw: Buffer | string, boundary: string): { type: string; body: string }[] {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  const delimiter = `--${boundary}`;
  const chunks = text.split(/\r?\n/).reduce<string[][]>(
    (acc, line) => {
      if (line.startsWith(delimiter)) {
        if (line.startsWith(`${delimiter}--`)) acc.push(['\u0000end']);
        else acc.push([]);
      } else acc[acc.length - 1]!.push(line);
      return acc;
    },
    [[]],
  );
  const parts: { type: string; body: string }[] = [];
  for (const lines of chunks.slice(1, MAX_PARTS + 1)) {
    if (lines[0] === '\u0000end') break;
    const blank = lines.findIndex((l) => l.trim() === '');
    const head = parseFieldBlock(lines.slice(0, blank < 0 ? lines.length : blank).join('\n'));
    let body = blank < 0 ? '' : lines.slice(blank + 1).join('\r\n');
    const cte = (head['content-transfer-encoding'] ?? '').toLowerCase().trim();
    if (cte === 'base64') body = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    else if (cte === 'quoted-printable') body = decodeQuotedPrintable(body);
    const type = (head['content-type'] ?? 'text/plain').split(';', 1)[0]!.trim().toLowerCase();
    parts.push({ type, body });
  }
  return parts;
}

function angleAddr(value: string | undefined): string | null {
  if (!value) return null;
  const m = /<([^<>\s]*)>/.exec(value);
  const v = (m ? m[1]! : value).trim();
  return v || null;
}

function originalFrom(texts: string[]): OriginalMessage {
  for (const text of texts) {
    const head = text.replace(/^(\r?\n)+/, '').split(/\r?\n\r?\n/, 1)[0] ?? '';
    const f = parseFieldBlock(head);
    if (f['message-id'] || f['return-path']) {
      return { messageId: angleAddr(f['message-id']), returnPath: angleAddr(f['return-path']) };
    }
  }
  return { messageId: null, returnPath: null };
}

function boundaryOf(mail: ParsedMail): string | null {
  const ct = mail.headers.get('content-type') as { params?: Record<string, string> } | string | undefined;
  return typeof ct === 'object' && ct.params?.boundary ? ct.params.boundary : null;
}

/** The returned original: a mailparser attachment, else the raw report part. */
function originalMessage(mail: ParsedMail, raw: Buffer | string | null): OriginalMessage {
  const texts = mail.attachments.filter((a) => ORIGINAL_TYPES.has(a.contentType.toLowerCase())).map(contentText);
  const boundary = raw ? boundaryOf(mail) : null;
  if (raw && boundary) {
    for (const p of reportParts(raw, boundary)) if (ORIGINAL_TYPES.has(p.type)) texts.push(p.body);
  }
  return originalFrom(texts);
}

/**
 * Recognises a DSN or an ARF report in a parsed message; null for anything else. `raw` (the
 * message as received) lets the returned original be found where mailparser inlined it.
 */
export function detectReport(mail: ParsedMail, raw: Buffer | string | null = null): MailReport | null {
  for (const a of mail.attachments) {
    const type = a.contentType.toLowerCase();
    if (type === 'message/delivery-status' || type === 'message/global-delivery-status') {
      return { kind: 'dsn', recipients: parseDeliveryStatus(contentText(a)), original: originalMessage(mail, raw) };
    }
    if (type === 'message/feedback-report') {
      return { kind: 'arf', feedback: parseFeedbackReport(contentText(a)), original: originalMessage(mail, raw) };
    }
  }
  return null;
}

const BOUNCE_SUBJECT =
  /undeliver|undelivered mail|delivery (status notification|failure|has failed|failed)|mail delivery (failed|failure|system)|returned mail|failure notice|non-?delivery|could not be delivered/i;

/**
 * A bounce without a machine-readable report (old Exim, qmail, appliances): a mailer-daemon
 * sender, X-Failed-Recipients, or a bounce subject. An out-of-office reply to the return path
 * has none of these and is not a bounce.
 */
export function looksLikeBounce(mail: ParsedMail): boolean {
  if (mail.headers.has('x-failed-recipients')) return true;
  const from = mail.from?.value[0]?.address ?? '';
  if (/^(mailer-daemon|mail-daemon|postmaster)@/i.test(from)) return true;
  return BOUNCE_SUBJECT.test(mail.subject ?? '');
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
