// Tracking links (DESIGN §6): open pixel /t/o/<token>, click redirect /t/c/<token>, one-click
// unsubscribe /t/u/<token>. A token is base64url(JSON payload) "." base64url(HMAC-SHA256 over
// the payload, truncated to 16 bytes), keyed by a key derived from SECRET_KEY so these tokens can
// never be confused with other HMACs of the install (VERP). The click token carries its
// destination: a link cannot be pointed elsewhere without the secret, so /t/c is no open redirect.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type TrackingKind = 'o' | 'c' | 'u';

export interface TrackingPayload {
  kind: TrackingKind;
  emailId: string;
  recipientId: string;
  /** Click tokens only: the destination (http or https). */
  url?: string;
}

const SIG_BYTES = 16;
const KINDS: ReadonlySet<string> = new Set(['o', 'c', 'u']);
const keyCache = new Map<string, Buffer>();

function trackingKey(secret: string): Buffer {
  let key = keyCache.get(secret);
  if (!key) {
    key = createHmac('sha256', secret).update('tern/tracking-token/v1').digest();
    keyCache.set(secret, key);
  }
  return key;
}

function sign(secret: string, body: string): Buffer {
  return createHmac('sha256', trackingKey(secret)).update(body).digest().subarray(0, SIG_BYTES);
}

/** Whether `url` is an absolute http(s) URL: the only destinations a click token may carry. */
export function isHttpUrl(url: string): boolean {
  if (!/^https?:\/\//i.test(url.trim())) return false;
  try {
    const u = new URL(url.trim());
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

export function signTrackingToken(secret: string, p: TrackingPayload): string {
  if (p.kind === 'c' && (!p.url || !isHttpUrl(p.url))) throw new Error('click tokens need an http(s) url');
  const fields = p.kind === 'c' ? [p.kind, p.emailId, p.recipientId, p.url] : [p.kind, p.emailId, p.recipientId];
  const body = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${body}.${sign(secret, body).toString('base64url')}`;
}

/** The payload of a well-formed, correctly signed token of `kind`; null for anything else. */
export function verifyTrackingToken(secret: string, token: string, kind: TrackingKind): TrackingPayload | null {
  if (token.length > 16_384) return null;
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m) return null;
  const given = Buffer.from(m[2]!, 'base64url');
  const expected = sign(secret, m[1]!);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string')) return null;
  const [k, emailId, recipientId, url] = fields as string[];
  if (k !== kind || !KINDS.has(k) || !emailId || !recipientId) return null;
  if (kind === 'c') {
    // Checked again on the way out: even a signed token never redirects to javascript: or data:.
    if (fields.length !== 4 || !url || !isHttpUrl(url)) return null;
    return { kind, emailId, recipientId, url };
  }
  return fields.length === 3 ? { kind, emailId, recipientId } : null;
}

export interface LinkParams {
  baseUrl: string;
  secret: string;
  emailId: string;
  recipientId: string;
}

function link(baseUrl: string, kind: TrackingKind, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/t/${kind}/${token}`;
}

export function openPixelUrl(p: LinkParams): string {
  return link(
    p.baseUrl,
    'o',
    signTrackingToken(p.secret, { kind: 'o', emailId: p.emailId, recipientId: p.recipientId }),
  );
}

export function clickUrl(p: LinkParams & { url: string }): string {
  const token = signTrackingToken(p.secret, { kind: 'c', emailId: p.emailId, recipientId: p.recipientId, url: p.url });
  return link(p.baseUrl, 'c', token);
}

/** The one-click unsubscribe URL for `List-Unsubscribe` (RFC 8058) and unsubscribe links. */
export function unsubscribeUrl(p: LinkParams): string {
  return link(
    p.baseUrl,
    'u',
    signTrackingToken(p.secret, { kind: 'u', emailId: p.emailId, recipientId: p.recipientId }),
  );
}

/** The RFC 2369 / RFC 8058 headers for a message that offers one-click unsubscribe. */
export function listUnsubscribeHeaders(p: LinkParams): { 'List-Unsubscribe': string; 'List-Unsubscribe-Post': string } {
  return { 'List-Unsubscribe': `<${unsubscribeUrl(p)}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };
}
