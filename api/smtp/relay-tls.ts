// The relay's TLS certificate: the operator's (RELAY_TLS_CERT / RELAY_TLS_KEY, PEM files), or,
// for development, a self-signed one generated at first start and kept under .data/relay-tls/ so
// that a client which pinned it keeps working across restarts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import { fromRoot } from '../../shared/paths.js';

export interface TlsMaterial {
  key: Buffer;
  cert: Buffer;
  selfSigned: boolean;
}

export async function selfSignedCertificate(commonName: string): Promise<{ key: string; cert: string }> {
  const altNames = [...new Set([commonName, 'localhost', hostname()])].map((value) => ({ type: 2 as const, value }));
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 825 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [...altNames, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

export async function loadRelayTls(
  config: Config,
  logger: Logger,
  dir = fromRoot('.data', 'relay-tls'),
): Promise<TlsMaterial> {
  if (config.relayTlsCert && config.relayTlsKey) {
    return { cert: readFileSync(config.relayTlsCert), key: readFileSync(config.relayTlsKey), selfSigned: false };
  }
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  if (!existsSync(certPath) || !existsSync(keyPath)) {
    const pems = await selfSignedCertificate(config.mxHost);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyPath, pems.key, { mode: 0o600 });
    writeFileSync(certPath, pems.cert);
    logger.warn(
      { event: 'RELAY_SELF_SIGNED_CERT', certPath },
      'no RELAY_TLS_CERT/RELAY_TLS_KEY: generated a self-signed certificate (development only)',
    );
  }
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), selfSigned: true };
}
