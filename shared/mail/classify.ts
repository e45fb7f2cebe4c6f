// Turns an SMTP reply (or a failure to get one) into an outcome, with SES's vocabulary
// (DESIGN §6): 2xx delivered; 4xx deferred with a delay type; 5xx bounced, and hard only when
// the address itself is bad, so a recipient is never suppressed for the sender's problem.
// `blocked` marks provider blocks and throttles (metrics count them); `throttle` tells the
// delivery worker to slow down towards that provider.
import type { BounceType } from '../events.js';
import {
  ADDRESS_CATEGORIES,
  categoryFromEnhanced,
  categoryFromText,
  splitEnhanced,
  type Category,
} from './reply-rules.js';

export interface SmtpReply {
  code: number;
  /** RFC 3463 enhanced status code `class.subject.detail`, or null when the server sent none. */
  enhanced: string | null;
  text: string;
}

export type DeliveryOutcome = 'delivered' | 'deferred' | 'bounced';

export interface ReplyClassification {
  outcome: DeliveryOutcome;
  /** Bounces only: `undetermined` when a 5xx reply carries nothing recognisable. */
  bounceType?: BounceType;
  /** SES bounce sub-type or delay type; empty for `delivered` (record no detail then). */
  detail: string;
  blocked: boolean;
  throttle: boolean;
}

const ENHANCED_AT_START = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;
// qmail and some appliances put the code at the end, e.g. "(#5.1.1)".
const ENHANCED_HASH = /#([245]\.\d{1,3}\.\d{1,3})(?!\.?\d)/;

/** Splits a (possibly multi-line) reply into its code, enhanced code and one line of text. */
export function parseReply(raw: string): SmtpReply {
  const lines = raw.split(/\r?\n/).filter((l) => l.trim() !== '');
  let code = 0;
  let enhanced: string | null = null;
  const texts: string[] = [];
  for (const line of lines) {
    const m = /^(\d{3})(?:[ -]|$)(.*)$/.exec(line);
    if (!m) {
      texts.push(line.trim());
      continue;
    }
    if (code === 0) code = Number(m[1]);
    let rest = m[2]!.trim();
    const e = ENHANCED_AT_START.exec(rest);
    if (e) {
      enhanced ??= e[0];
      rest = rest.slice(e[0].length).trim();
    }
    if (rest !== '') texts.push(rest);
  }
  const text = texts.join(' ');
  if (enhanced === null) enhanced = ENHANCED_HASH.exec(text)?.[1] ?? null;
  // RFC 3463: the enhanced class must agree with the reply code; a disagreeing one is noise.
  if (enhanced !== null && code !== 0 && enhanced[0] !== String(code)[0]) enhanced = null;
  return { code, enhanced, text };
}

function fallbackForSubject(enhanced: string | null): Category | null {
  const parts = splitEnhanced(enhanced);
  if (!parts) return null;
  switch (parts.subject) {
    case 1:
      return 'address';
    case 2:
    case 3:
      return 'server';
    case 4:
      return 'network';
    case 5:
      return 'protocol';
    case 6:
    case 7:
      return 'content';
    default:
      return null;
  }
}

function categorize(enhanced: string | null, text: string): Category | null {
  const byText = categoryFromText(text);
  // A named block or throttle (Spamhaus, [PH01], S3150, "rate limited") can only make an outcome
  // softer, so it wins over the enhanced code: providers reuse 5.7.1 and 5.7.9 for everything.
  if (byText === 'throttle' || byText === 'block') return byText;
  const byCode = categoryFromEnhanced(enhanced);
  if (byCode) return byCode;
  // Words about a missing user under a content, system or policy code (x.3, x.6, x.7) are not
  // proof that the address is bad: the code wins and the bounce stays soft.
  const subject = splitEnhanced(enhanced)?.subject;
  const codeForbidsHard = subject === 3 || subject === 6 || subject === 7;
  if (byText && !(codeForbidsHard && ADDRESS_CATEGORIES.has(byText))) return byText;
  return fallbackForSubject(enhanced);
}

function result(
  outcome: DeliveryOutcome,
  detail: string,
  flags: { bounceType?: BounceType; blocked?: boolean; throttle?: boolean } = {},
): ReplyClassification {
  const r: ReplyClassification = {
    outcome,
    detail,
    blocked: flags.blocked ?? false,
    throttle: flags.throttle ?? false,
  };
  if (flags.bounceType) r.bounceType = flags.bounceType;
  return r;
}

function deferred(category: Category | null): ReplyClassification {
  switch (category) {
    case 'mailbox_full':
      return result('deferred', 'MailboxFull');
    case 'throttle':
      return result('deferred', 'IPFailure', { blocked: true, throttle: true });
    case 'block':
      return result('deferred', 'IPFailure', { blocked: true });
    case 'spam_block':
      return result('deferred', 'SpamDetected', { blocked: true });
    case 'content':
    case 'attachment':
      return result('deferred', 'SpamDetected');
    case 'network':
      return result('deferred', 'TransientCommunicationFailure');
    default:
      // The server answered and asked us to come back later: greylisting, resources, local faults.
      return result('deferred', 'RecipientServerError');
  }
}

function bounced(category: Category | null): ReplyClassification {
  const soft = (detail: string, blocked = false, throttle = false) =>
    result('bounced', detail, { bounceType: 'soft', blocked, throttle });
  switch (category) {
    case 'no_email':
      return result('bounced', 'NoEmail', { bounceType: 'hard' });
    case 'address':
      return result('bounced', 'General', { bounceType: 'hard' });
    case 'mailbox_full':
      return soft('MailboxFull');
    case 'too_large':
      return soft('MessageTooLarge');
    case 'auth':
    case 'content':
      return soft('ContentRejected');
    case 'spam_block':
      return soft('ContentRejected', true);
    case 'attachment':
      return soft('AttachmentRejected');
    case 'block':
      return soft('IPFailure', true);
    case 'throttle':
      return soft('IPFailure', true, true);
    case null:
      // A bare 5xx with words we do not know: not enough to call the address bad.
      return result('bounced', 'Undetermined', { bounceType: 'undetermined' });
    default:
      return soft('General');
  }
}

/** Classifies the final reply to RCPT or DATA (or to the connection greeting / EHLO / MAIL). */
export function classifyReply(reply: SmtpReply): ReplyClassification {
  const { code } = reply;
  if (code >= 200 && code < 300) return result('delivered', '');
  const category = categorize(reply.enhanced, reply.text);
  if (code >= 400 && code < 500) return deferred(category);
  if (code >= 500 && code < 600) return bounced(category);
  // 1xx/3xx as a final answer, or no code at all: a broken conversation, try again later.
  return result('deferred', 'Undetermined');
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENODATA',
  'ESERVFAIL',
  'ECONNECTION', // nodemailer's names for the same failures
  'ESOCKET',
  'EDNS',
  'ETLS',
  'EPROTOCOL',
  'EENVELOPE',
  'EMESSAGE',
  'ETIMEOUT',
  'ECANCELLED',
  'ESTREAM',
]);

function isTlsError(code: string, message: string): boolean {
  return (
    /^ERR_(TLS|SSL)_|^ERR_SSL|CERT|^DEPTH_ZERO|^SELF_SIGNED|^UNABLE_TO_(GET|VERIFY)|^HOSTNAME_MISMATCH/.test(code) ||
    /\b(tls|ssl)\b|certificate|handshake/i.test(message)
  );
}

/** A failure to reach or talk to the receiving server: always deferred (retry with backoff). */
export function classifyConnectionError(err: unknown): ReplyClassification {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  if (NETWORK_CODES.has(code) || isTlsError(code, message)) {
    return result('deferred', 'TransientCommunicationFailure');
  }
  if (/timed? ?out|socket|connection (closed|refused|reset)|greeting never received/i.test(message)) {
    return result('deferred', 'TransientCommunicationFailure');
  }
  return result('deferred', 'Undetermined');
}

/**
 * For errors thrown by an SMTP client (nodemailer's carry `responseCode` and `response`): the
 * server's reply when there is one, otherwise the connection failure.
 */
export function classifySmtpError(err: unknown): ReplyClassification {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { responseCode?: unknown; response?: unknown };
  if (typeof e.responseCode === 'number' && e.responseCode >= 200) {
    const parsed = typeof e.response === 'string' ? parseReply(e.response) : null;
    const code = parsed && parsed.code !== 0 ? parsed.code : e.responseCode;
    return classifyReply({ code, enhanced: parsed?.enhanced ?? null, text: parsed?.text ?? '' });
  }
  return classifyConnectionError(err);
}
