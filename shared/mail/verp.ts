// VERP return paths (DESIGN §6): every recipient gets its own envelope sender
// `b+<token>@bounces.<domain>`, so an asynchronous bounce names the recipient it is about. The
// token is the recipient id (a ULID, already Crockford base32) lower-cased, a dot, and 13 base32
// characters (65 bits) of an HMAC with the install secret, so that forged bounces are dropped.
// Lower case throughout: some MTAs fold the case of local parts.
import { createHmac, timingSafeEqual } from 'node:crypto';

const B32 = 'abcdefghijklmnopqrstuvwxyz234567';
const MAC_CHARS = 13;
const TOKEN_RE = /^([a-z]{2,8})_([0-9a-hjkmnp-tv-z]{26})\.([a-z2-7]{13})$/;

function mac(recipientId: string, secret: string): string {
  const digest = createHmac('sha256', secret).update(`verp:${recipientId}`).digest();
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < MAC_CHARS) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= MAC_CHARS) break;
  }
  return out;
}

export function verpToken(recipientId: string, secret: string): string {
  return `${recipientId.toLowerCase()}.${mac(recipientId, secret)}`;
}

/** The recipient id a token names, or null when it is malformed or its HMAC does not match. */
export function parseVerpToken(token: string, secret: string): string | null {
  const m = TOKEN_RE.exec(token.toLowerCase());
  if (!m) return null;
  const recipientId = `${m[1]}_${m[2]!.toUpperCase()}`;
  const expected = Buffer.from(mac(recipientId, secret));
  const given = Buffer.from(m[3]!);
  return expected.length === given.length && timingSafeEqual(expected, given) ? recipientId : null;
}

export function verpAddress(recipientId: string, fromDomain: string, secret: string): string {
  return `b+${verpToken(recipientId, secret)}@bounces.${fromDomain}`;
}

/** The recipient id of `b+<token>@bounces.<domain>` (the MX side of VERP), or null. */
export function parseVerpAddress(address: string, secret: string): string | null {
  const m = /^b\+([^@]+)@bounces\.[^@]+$/i.exec(address.trim());
  return m ? parseVerpToken(m[1]!, secret) : null;
}

/** Mailbox for the List-Unsubscribe mailto: form: `u+<token>@bounces.<domain>`. */
export function unsubscribeMailbox(recipientId: string, fromDomain: string, secret: string): string {
  return `u+${verpToken(recipientId, secret)}@bounces.${fromDomain}`;
}
