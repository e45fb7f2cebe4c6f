// Webhook signatures (SPEC "Events"): `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`,
// one v1 entry per signing secret (two during a rotation). The scheme is Stripe's, so Stripe's
// own verifier accepts it. The secret is the HMAC key exactly as given (the `whsec_…` string's
// UTF-8 bytes, not a decoded form), and the HMAC covers the raw body bytes: a body parsed and
// serialised again has other bytes and will not verify. Exported for customers' receivers.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const DEFAULT_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

function hmacHex(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret)
    .update(`${timestamp}.`)
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('hex');
}

/**
 * The signature header value for `body`. Pass several secrets (newest first) during a rotation;
 * `timestamp` defaults to now, in unix seconds.
 */
export function sign(
  body: string | Buffer,
  secret: string | string[],
  timestamp: number = Math.floor(Date.now() / 1000),
): string {
  const secrets = Array.isArray(secret) ? secret : [secret];
  if (secrets.length === 0) throw new TypeError('sign: at least one secret is needed');
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${hmacHex(s, timestamp, body)}`)].join(',');
}

function parseHeader(header: string): { timestamp: number; signatures: string[] } {
  let timestamp = NaN;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
  }
  return { timestamp, signatures };
}

/**
 * Checks a signature header against the raw body. Throws `WebhookVerificationError` saying why
 * (no timestamp, no v1 entry, too old or too new, no matching signature); returns true otherwise.
 * Any one matching v1 entry is enough (rotation). `toleranceSeconds <= 0` skips the age check.
 */
export function verify(
  rawBody: string | Buffer,
  header: string | string[] | undefined | null,
  secret: string,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  now: number = Math.floor(Date.now() / 1000),
): true {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) throw new WebhookVerificationError('Missing signature header');
  const { timestamp, signatures } = parseHeader(value);
  if (!Number.isFinite(timestamp)) throw new WebhookVerificationError('Signature header has no timestamp (t=)');
  if (signatures.length === 0) throw new WebhookVerificationError('Signature header has no v1 signature');
  if (toleranceSeconds > 0 && Math.abs(now - timestamp) > toleranceSeconds) {
    throw new WebhookVerificationError('Signature timestamp is outside the tolerance');
  }
  const expected = Buffer.from(hmacHex(secret, timestamp, rawBody), 'hex');
  const match = signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
  if (!match) throw new WebhookVerificationError('No signature matches the body and secret');
  return true;
}

/** Like `verify`, but answers false instead of throwing. */
export function isValidSignature(
  rawBody: string | Buffer,
  header: string | string[] | undefined | null,
  secret: string,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
): boolean {
  try {
    return verify(rawBody, header, secret, toleranceSeconds);
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}
