// Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a successful
// sign-in leaves the browser a cookie naming the email it signed in with, a random nonce and an
// HMAC under SECRET_KEY. A later sign-in for that email from that browser is throttled by its own
// bucket (the nonce's) instead of the email's, so someone guessing at the account from elsewhere,
// who empties the email's bucket, does not lock its owner out. The cookie holds no secret of the
// account and grants nothing by itself: the password is still checked.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../shared/config.js';
import type { ApiContext } from '../types.js';

export const DEVICE_COOKIE = 'console_device';
const MAX_AGE_SECONDS = 365 * 86_400;

function signature(config: Config, email: string, nonce: string): string {
  return createHmac('sha256', config.secretKey)
    .update(`console-device\0${email.toLowerCase()}\0${nonce}`)
    .digest('base64url');
}

/** The nonce of the request's device cookie when it was issued for `email`, else null. */
export function trustedDevice(ctx: ApiContext, email: string): string | null {
  const raw = ctx.cookies.get(DEVICE_COOKIE);
  const m = raw ? /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(raw) : null;
  if (!m) return null;
  const want = Buffer.from(signature(ctx.deps.config, email, m[1]!));
  const got = Buffer.from(m[2]!);
  return want.length === got.length && timingSafeEqual(want, got) ? m[1]! : null;
}

/** Gives the browser a device cookie for `email` (keeping its nonce when it had one for it). */
export function rememberDevice(ctx: ApiContext, email: string, nonce: string | null): void {
  const n = nonce ?? randomBytes(16).toString('base64url');
  const parts = [
    `${DEVICE_COOKIE}=${n}.${signature(ctx.deps.config, email, n)}`,
    'Path=/console',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${MAX_AGE_SECONDS}`,
  ];
  if (ctx.deps.config.baseUrl.startsWith('https:')) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}
