// Sealing the secrets at rest again (shared/secrets.ts): every webhook signing secret (current
// and previous) and DKIM private key that is not sealed with the current SECRET_KEY is opened
// (a row from before sealing is plain text; one of SECRET_KEY_PREVIOUS opens with it) and
// sealed with it. `tern secrets rotate` does it for every row; `tern migrate` and `npm start` for
// plain-text rows only. A row is written only if it still holds what was read (a secret rotated
// meanwhile is left to its writer), in batches, so it is safe beside running processes and when
// run twice.
import { replaceSecret, SECRET_COLUMNS, secretsNotSealedAs, type SecretColumn } from './db/stored-secrets.js';
import type { Db } from './db/pool.js';
import { UnknownSecretKeyError, type SecretBox } from './secrets.js';

const BATCH = 500;

export interface SealResult {
  /** Values sealed again (a webhook's two secrets count as two). */
  sealed: number;
  /** Values of a key neither SECRET_KEY nor SECRET_KEY_PREVIOUS opens (left as they are). */
  unknownKey: number;
}

async function sealColumn(db: Db, box: SecretBox, c: SecretColumn, plainOnly: boolean, result: SealResult) {
  const prefix = plainOnly ? 'v1:' : `v1:${box.kid}:`;
  for (let after = ''; ;) {
    const rows = await secretsNotSealedAs(db, c, prefix, after, BATCH);
    if (rows.length === 0) return;
    for (const row of rows) {
      let plain: string;
      try {
        plain = box.open(row.value, c.purpose);
      } catch (err) {
        if (!(err instanceof UnknownSecretKeyError)) throw err;
        result.unknownKey++;
        continue;
      }
      if (await replaceSecret(db, c, row.id, row.value, box.seal(plain, c.purpose))) result.sealed++;
    }
    after = rows.at(-1)!.id;
  }
}

/** Seals every stored secret with `box`'s current key (`plainOnly`: only those never sealed). */
export async function sealStoredSecrets(
  db: Db,
  box: SecretBox,
  opts: { plainOnly?: boolean } = {},
): Promise<SealResult> {
  const result: SealResult = { sealed: 0, unknownKey: 0 };
  for (const c of SECRET_COLUMNS) await sealColumn(db, box, c, opts.plainOnly ?? false, result);
  return result;
}
