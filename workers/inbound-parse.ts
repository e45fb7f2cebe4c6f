// The fields of a parsed inbound message as they are stored (text cleaned for Postgres), and
// threading: which message of the organization a reply answers.
import type { AddressObject, ParsedMail } from 'mailparser';
import { findEmailByMessageId, type ParsedInbound } from '../shared/db/inbound.js';
import type { Db } from '../shared/db/pool.js';
import { newId } from '../shared/ids.js';
import { isAutoReply } from '../shared/mail/reports.js';

export type BaseFields = Omit<ParsedInbound, 'orgId' | 'domainId' | 'kind' | 'emailId'>;

function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((o) => o.value.map((v) => v.address ?? '').filter(Boolean));
}

function bare(id: string): string {
  return id.trim().replace(/^<|>$/g, '');
}

/** Message ids named by In-Reply-To, then References (newest first). */
function referencedIds(mail: ParsedMail): string[] {
  const refs = Array.isArray(mail.references) ? mail.references : mail.references ? [mail.references] : [];
  const ids = [...(mail.inReplyTo ? mail.inReplyTo.split(/\s+/) : []), ...refs.slice().reverse()];
  return [...new Set(ids.map(bare).filter(Boolean))];
}

/** The org's message a reply answers: an id whose domain is one of the org's domains. */
export async function thread(db: Db, orgId: string, orgDomains: string[], mail: ParsedMail): Promise<string | null> {
  for (const id of referencedIds(mail)) {
    const domain = id.slice(id.lastIndexOf('@') + 1).toLowerCase();
    if (!orgDomains.includes(domain)) continue;
    const emailId = await findEmailByMessageId(db, orgId, id);
    if (emailId) return emailId;
  }
  return null;
}

// A UTF-16 surrogate that is not half of a pair: what a UTF-16 part or encoded word of an odd
// byte count decodes to. Postgres refuses it in jsonb (the headers, the event's data).
const LONE_SURROGATE = /\p{Cs}/gu;

/**
 * Postgres text and jsonb refuse NUL characters, which binary garbage in a message carries
 * (dropped), and jsonb lone surrogates (replaced by U+FFFD, as text columns store them).
 */
export function clean(s: string): string;
export function clean(s: string | null | undefined): string | null;
export function clean(s: string | null | undefined): string | null {
  return s == null ? null : s.replaceAll('\u0000', '').replace(LONE_SURROGATE, '\ufffd');
}

export function baseFields(mail: ParsedMail): BaseFields {
  return {
    fromAddress: clean(addresses(mail.from)[0]),
    to: addresses(mail.to).map((a) => clean(a)),
    cc: addresses(mail.cc).map((a) => clean(a)),
    subject: clean(mail.subject),
    text: clean(mail.text),
    html: typeof mail.html === 'string' ? clean(mail.html) : null,
    headers: mail.headerLines.map((h) => ({
      key: clean(h.key),
      value: clean(h.line.slice(h.line.indexOf(':') + 1).trim()),
    })),
    messageId: mail.messageId ? clean(bare(mail.messageId)) : null,
    inReplyTo: mail.inReplyTo ? clean(bare(mail.inReplyTo)) : null,
    autoReply: isAutoReply(mail),
    attachments: mail.attachments.map((a) => ({
      id: newId('att'),
      filename: clean(a.filename),
      contentType: clean(a.contentType),
      contentId: clean(a.cid),
      content: a.content,
    })),
  };
}
