// API key tokens (DESIGN §1, §3): `<brand>_live_<secret>` / `<brand>_test_<secret>`, the secret
// 32 random bytes in base62. Only a 12-character prefix and the SHA-256 hex of the whole token
// are ever stored.
import { hash, randomBytes } from 'node:crypto';
import { insertKey, type KeyRow, type NewKey } from './db/keys.js';
import type { Db } from './db/pool.js';

export const PERMISSIONS = ['SEND', 'FULL', 'ADMIN'] as const;
export type Permission = (typeof PERMISSIONS)[number];
export const MODES = ['live', 'test'] as const;
export type Mode = (typeof MODES)[number];

export const TOKEN_PREFIX_LENGTH = 12;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)]! + out;
    n /= 62n;
  }
  // Fixed width so every token has the same length (32 bytes → at most 43 base62 digits).
  return out.padStart(43, '0');
}

export interface MintedToken {
  token: string;
  prefix: string;
  hash: string;
}

export function mintToken(brand: string, mode: Mode): MintedToken {
  const token = `${brand}_${mode}_${base62(randomBytes(32))}`;
  return { token, prefix: token.slice(0, TOKEN_PREFIX_LENGTH), hash: hashToken(token) };
}

export function hashToken(token: string): string {
  // The one-shot crypto.hash: no Hash object per call (every API request hashes its token).
  return hash('sha256', token, 'hex');
}

/** The mode a token claims by its prefix, or null when it is not a token of this brand. */
export function parseToken(brand: string, token: string): Mode | null {
  const m = /^([a-z0-9]+)_(live|test)_([0-9A-Za-z]{32,64})$/.exec(token);
  if (!m || m[1] !== brand) return null;
  return m[2] as Mode;
}

const RANK: Record<Permission, number> = { SEND: 1, FULL: 2, ADMIN: 3 };

/** The ladder: FULL does all SEND does, ADMIN all FULL does. */
export function permits(have: Permission, need: Permission): boolean {
  return RANK[have] >= RANK[need];
}

/** Mints a key with a fresh token; the token is returned here and never stored. */
export async function mintKey(
  db: Db,
  brand: string,
  k: Omit<NewKey, 'tokenPrefix' | 'tokenHash'>,
): Promise<{ key: KeyRow; token: string }> {
  const t = mintToken(brand, k.mode);
  const key = await insertKey(db, { ...k, tokenPrefix: t.prefix, tokenHash: t.hash });
  return { key, token: t.token };
}
