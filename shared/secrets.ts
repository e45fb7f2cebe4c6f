// Secrets at rest (docs/operations.md "Secrets at rest"): webhook signing secrets and DKIM
// private keys are stored sealed with AES-256-GCM under a key derived from SECRET_KEY (HKDF-SHA256),
// as `v1:<kid>:<iv>:<ciphertext>:<tag>` (base64url), the purpose (`webhook-secret`, `dkim-key`) as
// associated data so that a value cannot be moved to another column. The kid names the key that
// sealed it (the first 8 hex digits of a SHA-256 of the derived key), so that after SECRET_KEY
// changes the old one (SECRET_KEY_PREVIOUS) still opens the rows `tern secrets rotate` has not yet
// sealed again. A value without the `v1:` prefix is a row from before sealing: it is read as it
// is, and sealed by `tern migrate` (when SECRET_KEY is set) or `tern secrets rotate`.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

export type SecretPurpose = 'webhook-secret' | 'dkim-key';

const VERSION = 'v1';
const SEALED = /^v1:([0-9a-f]{8}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]*):([A-Za-z0-9_-]{22})$/;

/** A sealed value whose key is neither SECRET_KEY's nor SECRET_KEY_PREVIOUS's. */
export class UnknownSecretKeyError extends Error {
  override name = 'UnknownSecretKeyError';
  constructor(readonly kid: string) {
    super(
      `a stored secret was sealed with another SECRET_KEY (key id ${kid}): set that key as SECRET_KEY_PREVIOUS and run tern secrets rotate`,
    );
  }
}

interface DerivedKey {
  kid: string;
  key: Buffer;
}

function derive(secretKey: string): DerivedKey {
  const key = Buffer.from(hkdfSync('sha256', secretKey, 'tern secrets at rest', 'aes-256-gcm v1', 32));
  return { kid: createHash('sha256').update(key).digest('hex').slice(0, 8), key };
}

/** True when `value` is sealed (of any key). */
export function isSealed(value: string): boolean {
  return SEALED.test(value);
}

export class SecretBox {
  private readonly current: DerivedKey;
  private readonly previous: DerivedKey | null;

  constructor(secretKey: string, previousKey: string | null = null) {
    this.current = derive(secretKey);
    this.previous = previousKey ? derive(previousKey) : null;
  }

  /** The key id new values are sealed with. */
  get kid(): string {
    return this.current.kid;
  }

  seal(plain: string, purpose: SecretPurpose): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(purpose));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, ct, cipher.getAuthTag()].map((b) => b.toString('base64url'));
    return [VERSION, this.current.kid, ...parts].join(':');
  }

  /** The plain value of a stored one (a value from before sealing is returned as it is). */
  open(stored: string, purpose: SecretPurpose): string {
    const m = SEALED.exec(stored);
    if (!m) return stored;
    const [, kid, iv, ct, tag] = m as unknown as [string, string, string, string, string];
    const key = [this.current, this.previous].find((k) => k?.kid === kid);
    if (!key) throw new UnknownSecretKeyError(kid);
    const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** True when `stored` is sealed with the current key (nothing for a rotation to do). */
  isCurrent(stored: string): boolean {
    return SEALED.exec(stored)?.[1] === this.current.kid;
  }
}

const boxes = new Map<string, SecretBox>();

/** The box of a configuration's SECRET_KEY (and SECRET_KEY_PREVIOUS), derived once per process. */
export function secretBox(config: { secretKey: string; secretKeyPrevious?: string | null }): SecretBox {
  const previous = config.secretKeyPrevious ?? null;
  const id = `${config.secretKey}\u0000${previous ?? ''}`;
  let box = boxes.get(id);
  if (!box) boxes.set(id, (box = new SecretBox(config.secretKey, previous)));
  return box;
}
