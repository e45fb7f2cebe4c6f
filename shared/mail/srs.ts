// Sender Rewriting Scheme for forwarded mail (docs/inbound.md "Forwarding"), as the SRS spec
// (Shevek, libsrs2, postsrsd) writes it. A forwarded copy leaves with the envelope sender
// `SRS0=HHHH=TT=<original domain>=<original local>@bounces.<domain>`: the receiver checks SPF
// against bounces.<domain>, whose record authorises this install, so SPF holds where a copy sent
// under the original sender's domain would fail. TT is the day (base32, modulo 1024) and HHHH an
// HMAC with the install secret over TT and the original address, so the MX accepts a bounce to
// the address only when Tern made it, within SRS_MAX_AGE_DAYS.
// A copy whose sender is already an SRS address (a forward of a forward) is not wrapped again,
// which would grow the local part past 64 characters within three hops: an SRS0 address of the
// first forwarder H1 becomes `SRS1=HHHH=<H1>==<the SRS0 address's part after "SRS0=">@…`, and an
// SRS1 address keeps its H1 and SRS0 part under a new hash. A bounce to an SRS1 address is for
// the SRS0 address at H1; its age is the SRS0 part's TT.
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

function mac(secret: string, text: string): string {
  return base32(createHmac('sha256', secret).update(text.toLowerCase()).digest(), HASH_CHARS);
}

function hash(secret: string, stamp: string, domain: string, local: string): string {
  return mac(secret, `srs:${stamp}:${domain}:${local}`);
}

/** The SRS1 hash over the first forwarder's host and the SRS0 part it made (its separator first). */
function hash1(secret: string, firstHost: string, srs0Part: string): string {
  return mac(secret, `srs1:${firstHost}:${srs0Part}`);
}

function split(address: string): { local: string; host: string } {
  const at = address.lastIndexOf('@');
  return at < 0 ? { local: address, host: '' } : { local: address.slice(0, at), host: address.slice(at + 1) };
}

/** An SRS0 local part's part after `SRS0`, and an SRS1 one's hash, first host and that part. */
const SRS0 = /^srs0([=+-].+)$/i;
const SRS1 = /^srs1[=+-]([a-z2-7]{4})=([^=@]+)=([=+-].+)$/i;

/**
 * The envelope sender of a forwarded copy of a message whose envelope sender is `sender` (a bare
 * address), on `host` (bounces.<domain>): SRS0 for a plain address, SRS1 for an SRS address.
 */
export function srsAddress(sender: string, host: string, secret: string, nowMs = Date.now()): string {
  const { local, host: senderHost } = split(sender);
  const at = host.toLowerCase();
  const one = SRS1.exec(local);
  if (one) {
    const [, , first, part] = one as unknown as [string, string, string, string];
    return `SRS1=${hash1(secret, first, part)}=${first}=${part}@${at}`;
  }
  const zero = SRS0.exec(local);
  if (zero && senderHost) {
    const first = senderHost.toLowerCase();
    return `SRS1=${hash1(secret, first, zero[1]!)}=${first}=${zero[1]!}@${at}`;
  }
  const domain = senderHost.toLowerCase();
  const stamp = dayStamp(nowMs);
  return `SRS0=${hash(secret, stamp, domain, local)}=${stamp}=${domain}=${local}@${at}`;
}

/** True when `address` (or its local part) has the SRS0 or SRS1 shape (whatever its hash). */
export function isSrsAddress(address: string): boolean {
  return /^srs[01][=+-]/i.test(address);
}

function ageOk(stamp: string, nowMs: number): boolean {
  const hi = B32.indexOf(stamp[0]!.toLowerCase());
  const lo = B32.indexOf(stamp[1]!.toLowerCase());
  if (hi < 0 || lo < 0) return false;
  const today = Math.floor(nowMs / DAY_MS) % 1024;
  return (today - (hi * 32 + lo) + 1024) % 1024 <= SRS_MAX_AGE_DAYS;
}

function sameHash(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given.toLowerCase());
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Where a bounce to an SRS address Tern made goes: the original sender of an SRS0 address, the
 * first forwarder's SRS0 address of an SRS1 one. Null when the address is malformed, its hash was
 * not made with `secret`, or it (its SRS0 part) is older than SRS_MAX_AGE_DAYS.
 */
export function parseSrsAddress(address: string, secret: string, nowMs = Date.now()): string | null {
  const { local } = split(address);
  const one = SRS1.exec(local);
  if (one) {
    const [, given, first, part] = one as unknown as [string, string, string, string];
    if (!sameHash(hash1(secret, first, part), given)) return null;
    const stamp = /^[=+-][^=]+=([a-z2-7]{2})=/i.exec(part);
    return stamp && ageOk(stamp[1]!, nowMs) ? `SRS0${part}@${first.toLowerCase()}` : null;
  }
  const m = /^srs0=([a-z2-7]{4})=([a-z2-7]{2})=([^=@]+)=(.+)$/i.exec(local);
  if (!m) return null;
  const [, given, stamp, domain, original] = m as unknown as [string, string, string, string, string];
  if (!sameHash(hash(secret, stamp.toLowerCase(), domain, original), given)) return null;
  return ageOk(stamp, nowMs) ? `${original}@${domain.toLowerCase()}` : null;
}
