// Turns a schema-valid send request into the rows to store, checking the rules a JSON schema
// cannot express: address syntax, recipient limits, from-domain ownership and verification,
// reserved headers, base64 attachments and their total size, the schedule window, and the
// html/text vs template rule. Every failure names the field, prefixed by `where` (e.g. `body[3]`
// for a batch item).
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import type { NewAttachment, NewEmail, NewRecipient } from '../../shared/db/emails.js';
import { buildEmailRow } from '../../shared/email-row.js';
import { scheduledReason } from '../../shared/db/emails.js';
import { ApiError, validationError } from '../../shared/errors.js';
import { assertNotDemoLive } from '../../shared/domains/demo.js';
import { newId } from '../../shared/ids.js';
import { formatMailbox, parseMailbox, type Mailbox } from '../../shared/mail/addresses.js';
import type { ResolvedTemplate } from '../../shared/templates.js';
import { MAX_ATTACHMENT_BYTES, MAX_RECIPIENTS_PER_FIELD, type SendEmailBody } from '../schemas/emails.js';

export const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

/**
 * Headers Tern writes itself: the envelope fields have their own body fields, Message-ID names
 * the message for threading replies and bounces (`<email_id@domain>`), and the MIME/DKIM headers
 * describe what Tern builds and signs. In-Reply-To, References and List-Unsubscribe are allowed.
 */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'reply-to',
  'sender',
  'date',
  'message-id',
  'return-path',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'dkim-signature',
  'received',
]);

export interface PreparedEmail {
  email: NewEmail;
  recipients: NewRecipient[];
  attachments: NewAttachment[];
}

function asList(where: string, field: string, value: unknown, required: boolean): string[] {
  if (value === undefined || value === null) {
    if (required) throw validationError(`${where}.${field} is required`);
    return [];
  }
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
    throw validationError(`${where}.${field} must be a string or an array of strings`);
  }
  if (required && list.length === 0) throw validationError(`${where}.${field} must name at least one address`);
  if (list.length > MAX_RECIPIENTS_PER_FIELD) {
    throw validationError(`${where}.${field} must have at most ${MAX_RECIPIENTS_PER_FIELD} addresses`);
  }
  return list as string[];
}

function mailboxes(where: string, field: string, list: string[]): Mailbox[] {
  return list.map((raw, i) => {
    const r = parseMailbox(raw);
    const at = typeof raw === 'string' && list.length === 1 ? `${where}.${field}` : `${where}.${field}[${i}]`;
    if (!r.ok) throw validationError(`${at} ${JSON.stringify(raw)} ${r.reason}`);
    return r.mailbox;
  });
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;
const RELATIVE = /^in\s+(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$/i;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `scheduled_at`: ISO 8601 with a zone, or Resend's relative form "in 10 min"; future, ≤ 30 days. */
export function parseSchedule(field: string, value: string, now: number): Date {
  let at: Date;
  const rel = RELATIVE.exec(value.trim());
  if (rel) {
    at = new Date(now + Number(rel[1]) * UNIT_MS[rel[2]!.toLowerCase()[0]!]!);
  } else if (ISO_8601.test(value.trim())) {
    at = new Date(value.trim());
  } else {
    throw validationError(`${field} must be an ISO 8601 date-time with a time zone (or "in N minutes")`);
  }
  if (Number.isNaN(at.getTime())) throw validationError(`${field} is not a valid date-time`);
  if (at.getTime() <= now) throw validationError(`${field} must be in the future`);
  if (at.getTime() - now > MAX_SCHEDULE_MS) throw validationError(`${field} must be at most 30 days ahead`);
  return at;
}

function checkHeaders(where: string, headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('x-tern-')) {
      throw validationError(`${where}.headers.${name} is set by Tern and cannot be given`);
    }
    if (/[\r\n\0]/.test(value)) throw validationError(`${where}.headers.${name} must not contain CR, LF or NUL`);
    out[name] = value;
  }
  return out;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** "40 MB", "512 KB": a size limit as the error messages name it. */
function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MB` : `${bytes / 1024} KB`;
}

function decodeAttachments(where: string, emailId: string, body: SendEmailBody, limit: number): NewAttachment[] {
  let total = 0;
  return (body.attachments ?? []).map((a, i) => {
    const compact = a.content.replace(/[\r\n]/g, '');
    if (!BASE64.test(compact) || compact.length % 4 === 1) {
      throw validationError(`${where}.attachments[${i}].content must be base64`);
    }
    const content = Buffer.from(compact, 'base64');
    total += content.length;
    if (total > limit) {
      throw validationError(`${where}.attachments total size exceeds ${sizeText(limit)}`);
    }
    return {
      email_id: emailId,
      position: i,
      filename: a.filename,
      content_type: a.content_type ?? null,
      content_id: a.content_id ?? null,
      size: content.length,
      content,
    };
  });
}

/** Checks the from address against the org's domains and the key's restriction. */
/** `field` names the sender in errors: `body.from` for the API, `MAIL FROM` for the relay. */
export function fromDomain(field: string, auth: AuthContext, from: Mailbox) {
  const domain = auth.domains.find((d) => d.name === from.domain);
  if (isRestricted(auth) && (!domain || !auth.key.domainIds.includes(domain.id))) {
    throw new ApiError('forbidden_domain', `This key may not send from ${from.domain}`);
  }
  if (!domain) throw validationError(`${field}: domain ${from.domain} is not a domain of this organization`);
  if (domain.status !== 'verified') throw validationError(`${field}: domain ${from.domain} is not verified`);
  assertNotDemoLive(domain, auth.key.mode);
  return domain;
}

function contentRule(where: string, body: SendEmailBody): void {
  if (body.template) {
    if (body.html !== undefined || body.text !== undefined) {
      throw validationError(`${where}.template cannot be combined with html or text`);
    }
    return;
  }
  if (body.html === undefined && body.text === undefined) {
    throw validationError(`${where}.html or ${where}.text is required (or a template)`);
  }
  if (body.subject === undefined) throw validationError(`${where}.subject is required`);
}

/** Checks done before a template is resolved (they need no I/O). */
export function precheck(where: string, body: SendEmailBody): void {
  contentRule(where, body);
  asList(where, 'to', body.to, true);
  for (const f of ['cc', 'bcc', 'reply_to'] as const) asList(where, f, body[f], false);
}

export interface PrepareOptions {
  auth: AuthContext;
  now: number;
  template?: ResolvedTemplate | undefined;
  /** Most bytes of attachments, decoded (default: POST /emails's). */
  attachmentBytes?: number;
  /** The message's id when a retry must reuse it (ApiState.retryIds); a new one otherwise. */
  id?: string | null | undefined;
}

/** Builds the rows of one message; throws 422 / 403 naming the field. */
export function prepareEmail(where: string, body: SendEmailBody, opts: PrepareOptions): PreparedEmail {
  const { auth, now, template: tpl } = opts;
  contentRule(where, body);
  const subject = body.subject ?? tpl?.subject ?? undefined;
  if (subject === undefined) throw validationError(`${where}.subject is required (the template has none)`);
  const fromRaw = body.from ?? tpl?.from ?? undefined;
  if (!fromRaw) throw validationError(`${where}.from is required`);
  const [from] = mailboxes(where, 'from', [fromRaw]);
  const domain = fromDomain(`${where}.from`, auth, from!);
  const fields = {
    to: mailboxes(where, 'to', asList(where, 'to', body.to, true)),
    cc: mailboxes(where, 'cc', asList(where, 'cc', body.cc, false)),
    bcc: mailboxes(where, 'bcc', asList(where, 'bcc', body.bcc, false)),
  };
  const replyTo = mailboxes(where, 'reply_to', asList(where, 'reply_to', body.reply_to, false));
  const headers = checkHeaders(where, body.headers);
  const scheduledAt = body.scheduled_at ? parseSchedule(`${where}.scheduled_at`, body.scheduled_at, now) : null;
  const id = opts.id ?? newId('em');
  const attachments = decodeAttachments(where, id, body, opts.attachmentBytes ?? MAX_ATTACHMENT_BYTES);
  const status = scheduledAt ? 'scheduled' : 'queued';
  const waitReason = scheduledAt ? scheduledReason(scheduledAt) : null;

  const seen = new Set<string>();
  const recipients: NewRecipient[] = [];
  for (const field of ['to', 'cc', 'bcc'] as const) {
    for (const m of fields[field]) {
      if (seen.has(m.email)) continue;
      seen.add(m.email);
      recipients.push({
        id: newId('rcp'),
        email_id: id,
        org_id: auth.org.id,
        field,
        address: formatMailbox(m),
        email: m.email,
        domain: m.domain,
        status,
        wait_reason: waitReason,
      });
    }
  }
  const email = buildEmailRow({
    id,
    orgId: auth.org.id,
    keyId: auth.key.id,
    mode: auth.key.mode,
    domain,
    from: { address: formatMailbox(from!), email: from!.email },
    to: fields.to.map(formatMailbox),
    cc: fields.cc.map(formatMailbox),
    bcc: fields.bcc.map(formatMailbox),
    replyTo: replyTo.map(formatMailbox),
    subject,
    html: tpl ? tpl.html : (body.html ?? null),
    text: tpl ? tpl.text : (body.text ?? null),
    headers,
    tags: body.tags,
    kind: body.kind,
    topicId: body.topic_id,
    template: tpl?.template,
    scheduledAt,
    stream: body.stream,
  });
  return { email, recipients, attachments };
}
