// Adding a sending domain: normalise the name, generate its DKIM key pair and the records it must
// publish, store them. Shared by `POST /domains` and `tern domain add`.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { Config } from '../config.js';
import { insertDomain, type DomainRow } from '../db/domains.js';
import type { Db } from '../db/pool.js';
import { normalizeDomainName } from '../mail/domain-name.js';
import { secretBox, type SecretBox } from '../secrets.js';
import { buildRecords } from './records.js';

const generateKeyPairAsync = promisify(generateKeyPair);

export type DomainSetupFailure = 'invalid_name' | 'duplicate' | 'taken';

/** Why a domain could not be added; the API maps `kind` to 422 or 409. */
export class DomainSetupError extends Error {
  constructor(
    readonly kind: DomainSetupFailure,
    message: string,
  ) {
    super(message);
    this.name = 'DomainSetupError';
  }
}

export interface DkimKeyPair {
  /** PKCS#8 PEM, sealed (shared/secrets.ts): stored so in the database, never in a response. */
  privateKeySealed: string;
  /** Base64 of the SubjectPublicKeyInfo DER: the `p=` tag of the DKIM record. */
  publicKeyBase64: string;
}

export async function generateDkimKey(box: SecretBox): Promise<DkimKeyPair> {
  // Asynchronous: RSA-2048 generation takes tens of milliseconds, off the event loop.
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeySealed: box.seal(privateKey, 'dkim-key'), publicKeyBase64: publicKey.toString('base64') };
}

/** Normalised name or a DomainSetupError('invalid_name'). */
export function parseDomainName(input: string): string {
  const name = normalizeDomainName(input);
  if (!name) throw new DomainSetupError('invalid_name', `"${input}" is not a valid domain name`);
  return name;
}

/** The constraint a Postgres unique violation names, else null. */
export function uniqueViolation(err: unknown): string | null {
  const e = err as { code?: unknown; constraint_name?: unknown };
  return e?.code === '23505' && typeof e.constraint_name === 'string' ? e.constraint_name : null;
}

/**
 * Creates the domain with a fresh DKIM key. `verified: true` is the operator override of
 * `tern domain add --verified`: the domain is marked verified without looking at DNS (its records
 * stay `pending`, since nobody checked them). `warmup: false` is `tern domain add --established`.
 */
export async function provisionDomain(
  db: Db,
  config: Pick<Config, 'mxHost' | 'secretKey'>,
  input: { orgId: string; name: string; verified?: boolean; warmup?: boolean },
): Promise<DomainRow> {
  const name = parseDomainName(input.name);
  const key = await generateDkimKey(secretBox(config));
  try {
    return await insertDomain(db, {
      orgId: input.orgId,
      name,
      status: input.verified ? 'verified' : 'pending',
      records: buildRecords(name, config.mxHost, key.publicKeyBase64),
      dkimPrivateKey: key.privateKeySealed,
      dkimPublicKey: key.publicKeyBase64,
      warmup: input.warmup ?? true,
    });
  } catch (err) {
    const constraint = uniqueViolation(err);
    if (constraint === 'domains_org_name_key') {
      throw new DomainSetupError('duplicate', `The domain ${name} already exists in this organization`);
    }
    if (constraint === 'domains_verified_name_key') {
      throw new DomainSetupError('taken', `The domain ${name} is already verified by another organization`);
    }
    throw err;
  }
}
