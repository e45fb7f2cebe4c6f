// The console's second factor (DESIGN §22): TOTP as RFC 6238 defines it and authenticator apps
// compute it (SHA-1, 6 digits, 30-second steps), by the otpauth library; a code is accepted one
// step either side of now (clock drift), and each step once (shared/db/users.ts useTotpStep).
// Recovery codes are random, shown once, and stored as their SHA-256.
import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

const PERIOD = 30;

function totp(secret: string, account = '', issuer = 'Tern'): TOTP {
  return new TOTP({
    issuer,
    label: account,
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(secret),
  });
}

/** A new secret (160 bits, as RFC 4226 recommends), base32. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The otpauth:// URI an authenticator app reads from the QR code. */
export function totpUri(secret: string, account: string, issuer: string): string {
  return totp(secret, account, issuer).toString();
}

/** The QR code of `uri` as SVG markup (made here, nothing loaded from elsewhere). */
export async function qrSvg(uri: string): Promise<string> {
  return await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
}

/** The time step of a valid code (one step of drift either way), or null. */
export function totpStep(secret: string, code: string, now = Date.now()): number | null {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const delta = totp(secret).validate({ token, timestamp: now, window: 1 });
  return delta === null ? null : Math.floor(now / 1000 / PERIOD) + delta;
}

/** Ten recovery codes like `4f7k-2m9q-x3wd`, each usable once instead of a code. */
export function newRecoveryCodes(): string[] {
  const alphabet = 'abcdefghijkmnpqrstuvwxyz23456789'; // 32: no modulo bias
  return Array.from({ length: 10 }, () => {
    const bytes = randomBytes(12);
    const chars = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
    return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8, 12)}`;
  });
}

/** A recovery code as stored (case and dashes do not matter when it is typed). */
export function recoveryHash(code: string): string {
  const plain = code.toLowerCase().replace(/[^a-z0-9]/g, '');
  return createHash('sha256').update(plain).digest('hex');
}
