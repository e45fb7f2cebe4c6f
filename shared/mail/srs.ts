// Sender Rewriting Scheme for forwarded mail (docs/inbound.md "Forwarding"). A forwarded copy
// leaves with the envelope sender `SRS0=HHHH=TT=<original domain>=<original local>@bounces.<domain>`:
// the receiver checks SPF against bounces.<domain>, whose record authorises this install, so SPF
// holds where a copy sent under the original sender's domain would fail. TT is the day (base32,
// modulo 1024) and HHHH an HMAC with the install secret over TT and the original address, so the
// MX accepts a bounce to the address only when Tern made it, within SRS_MAX_AGE_DAYS.
// Base32 in lower case (not SRS's customary base64) because MTAs may fold the case of local parts.
import { createHmac, timingSafeEqual } from 'node:crypto';

const B32 = 'abcdefghijklmnopqrstuvwxyz234567';
const HASH_CHARS = 4;
const DAY_MS = 86_400_000;
/** How long a bounce to an SRS address is accepted after the forward. */
export const SRS_MAX_AGE_DAYS = 21;

function base32(bytes: Buffer, chars: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= chars) break;
  }
  return out;
}

function dayStamp(nowMs: number): string {
  const day = Math.floor(nowMs / DAY_MS) % 1024;
  return B32[day >> 5]! + B32[day & 31]!;
}

function hash(secret: string, stamp: string, domain: string, local: string): string {
  const mac = createHmac('sha256', secret).update(`srs:${stamp}:${domain}:${local}`.toLowerCase()).digest();
  return base32(mac, HASH_CHARS);
}

/** The SRS0 address of `original` (a bare address) on `host` (bounces.<domain>). */
export function srsAddress(original: string, host: string, secret: string, nowMs = Date.now()): string {
  const at = original.lastIndexOf('@');
  const local = original.slice(0, at);
  const domain = original.slice(at + 1).toLowerCase();
  const stamp = dayStamp(nowMs);
  return `SRS0=${hash(secret, stamp, domain, local)}=${stamp}=${domain}=${local}@${host.toLowerCase()}`;
}

/** True when `address` has the SRS0 shape (whatever its hash). */
export function isSrsAddress(address: string): boolean {
  return /^srs0=/i.test(address);
}

/**
 * The original sender an SRS0 address carries, or null when it is malformed, its hash was not
 * made with `secret`, or it is older than SRS_MAX_AGE_DAYS.
 */
export function parseSrsAddress(address: string, secret: string, nowMs = Date.now()): string | null {
  const at = address.lastIndexOf('@');
  const m = /^srs0=([a-z2-7]{4})=([a-z2-7]{2})=([^=@]+)=(.+)$/i.exec(at < 0 ? address : address.slice(0, at));
  if (!m) return null;
  const [, given, stamp, domain, local] = m as unknown as [string, string, string, string, string];
  const expected = Buffer.from(hash(secret, stamp.toLowerCase(), domain, local));
  const got = Buffer.from(given.toLowerCase());
  if (expected.length !== got.length || !timingSafeEqual(expected, got)) return null;
  const day = B32.indexOf(stamp[0]!.toLowerCase()) * 32 + B32.indexOf(stamp[1]!.toLowerCase());
  const today = Math.floor(nowMs / DAY_MS) % 1024;
  const age = (today - day + 1024) % 1024;
  return age <= SRS_MAX_AGE_DAYS ? `${local}@${domain.toLowerCase()}` : null;
}
