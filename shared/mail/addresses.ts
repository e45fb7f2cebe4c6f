// RFC 5322 mailbox parsing for the sending API: `a@b.c`, `Name <a@b.c>`, `"Last, First" <a@b.c>`.
// Strict on purpose (unlike nodemailer's addressparser, which accepts almost anything): a
// message we accept must be deliverable as written, so groups, route addresses, comments,
// domain literals and obsolete syntax are refused with a reason the caller can act on.
import { normalizeDomainName } from './domain-name.js';

export interface Mailbox {
  /** Display name, unquoted (null when none). */
  name: string | null;
  /** The bare address, local part as written and the domain lower-cased (ASCII). */
  address: string;
  /** Lower-cased bare address: the key for dedupe and suppression look-ups. */
  email: string;
  domain: string;
}

export type ParseResult = { ok: true; mailbox: Mailbox } | { ok: false; reason: string };

// atext of RFC 5322 §3.2.3; a dot-atom is atext runs joined by single dots.
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const DOT_ATOM = new RegExp(`^${ATEXT}+(?:\\.${ATEXT}+)*$`);
// Quoted local part: printable ASCII except " and \, or a backslash pair.
const QUOTED_LOCAL = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
// An unquoted display name: words of atext, spaces and dots (dots are obsolete but universal),
// or any non-ASCII text (RFC 6532).
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const PLAIN_NAME = /^[^"<>()[\]\\,;:@\x00-\x1f\x7f]+$/;
const QUOTED_NAME = /^"((?:[^"\\\r\n]|\\[^\r\n])*)"$/;

const MAX_ADDRESS = 254;
const MAX_LOCAL = 64;

/** Parses a bare `local@domain` address. */
export function parseAddress(input: string): ParseResult {
  if (input.length > MAX_ADDRESS) return { ok: false, reason: `is longer than ${MAX_ADDRESS} characters` };
  const at = input.lastIndexOf('@');
  if (at <= 0) return { ok: false, reason: 'is not an email address (missing local part or @)' };
  const local = input.slice(0, at);
  const domainPart = input.slice(at + 1);
  if (local.length > MAX_LOCAL) return { ok: false, reason: `has a local part longer than ${MAX_LOCAL} characters` };
  if (!DOT_ATOM.test(local) && !QUOTED_LOCAL.test(local)) {
    return { ok: false, reason: `has an invalid local part "${local}"` };
  }
  if (domainPart.startsWith('[')) return { ok: false, reason: 'uses a domain literal, which is not supported' };
  const domain = normalizeDomainName(domainPart);
  if (!domain || domainPart.endsWith('.')) return { ok: false, reason: `has an invalid domain "${domainPart}"` };
  const address = `${local}@${domain}`;
  return { ok: true, mailbox: { name: null, address, email: address.toLowerCase(), domain } };
}

function parseName(raw: string): { ok: true; name: string | null } | { ok: false; reason: string } {
  const name = raw.trim();
  if (name === '') return { ok: true, name: null };
  const quoted = QUOTED_NAME.exec(name);
  if (quoted) return { ok: true, name: quoted[1]!.replace(/\\(.)/g, '$1') };
  if (!PLAIN_NAME.test(name)) {
    return { ok: false, reason: `has a display name that must be quoted: ${JSON.stringify(name)}` };
  }
  return { ok: true, name: name.replace(/\s+/g, ' ') };
}

/** Parses one mailbox: a bare address, or a display name followed by `<address>`. */
export function parseMailbox(input: string): ParseResult {
  if (/[\r\n\0]/.test(input)) return { ok: false, reason: 'contains a line break or NUL' };
  const value = input.trim();
  if (value === '') return { ok: false, reason: 'is empty' };
  if (!value.endsWith('>')) {
    if (/[<>]/.test(value)) return { ok: false, reason: 'has an unbalanced "<" or ">"' };
    return parseAddress(value);
  }
  const open = value.lastIndexOf('<');
  if (open < 0) return { ok: false, reason: 'has an unbalanced "<" or ">"' };
  const inner = value.slice(open + 1, -1).trim();
  if (/[<>]/.test(inner)) return { ok: false, reason: 'has nested "<" or ">"' };
  if (inner.startsWith('@')) return { ok: false, reason: 'uses a route address, which is not supported' };
  const name = parseName(value.slice(0, open));
  if (!name.ok) return name;
  const addr = parseAddress(inner);
  if (!addr.ok) return addr;
  return { ok: true, mailbox: { ...addr.mailbox, name: name.name } };
}

/** Formats a mailbox for a header: the name is quoted when it needs to be. */
export function formatMailbox(m: Pick<Mailbox, 'name' | 'address'>): string {
  if (!m.name) return m.address;
  const plain = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]+$/.test(m.name);
  const name = plain ? m.name : `"${m.name.replace(/(["\\])/g, '\\$1')}"`;
  return `${name} <${m.address}>`;
}
