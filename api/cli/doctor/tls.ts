// The TLS certificates of the relay (STARTTLS and SMTPS for clients) and of the MX (STARTTLS
// for sending servers): present, readable, key matching, valid for more than 14 days.
import { isIP } from 'node:net';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ToolConfig } from '../../../shared/config.js';
import { fail, ok, warn, type Check } from './check.js';

export const EXPIRY_WARNING_DAYS = 14;
const DAY = 86_400_000;

interface Pair {
  name: string;
  cert: string | null;
  key: string | null;
  vars: [string, string];
  unset: { message: string };
}

async function certificateCheck(p: Pair, host: string, now: Date): Promise<Check> {
  const [certVar, keyVar] = p.vars;
  const local = host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.test') || isIP(host) !== 0;
  const fix = local
    ? `set ${certVar} and ${keyVar} to the PEM files of a certificate for the public host name clients connect to (BASE_URL's host is ${host}, which no public CA certifies)`
    : `set ${certVar} and ${keyVar} to the PEM files of a certificate for ${host} (e.g. from Let's Encrypt)`;
  if (!p.cert || !p.key) return warn(p.name, p.unset.message, fix);
  let cert: X509Certificate;
  let pem: string;
  try {
    cert = new X509Certificate(await readFile(p.cert));
  } catch (err) {
    return fail(p.name, `${certVar}=${p.cert}: ${(err as Error).message}`, fix);
  }
  try {
    pem = await readFile(p.key, 'utf8');
  } catch (err) {
    return fail(p.name, `${keyVar}=${p.key}: ${(err as Error).message}`, fix);
  }
  let matches: boolean;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(pem));
  } catch (err) {
    return fail(p.name, `${keyVar}=${p.key}: not a private key (${(err as Error).message})`, fix);
  }
  if (!matches) return fail(p.name, `${keyVar} is not the key of the certificate in ${certVar}`, fix);
  const until = new Date(cert.validTo);
  const days = Math.floor((until.getTime() - now.getTime()) / DAY);
  const renew = `renew the certificate (e.g. certbot renew), then restart the ${p.name.replace('TLS ', '')} process`;
  if (until.getTime() <= now.getTime()) return fail(p.name, `expired on ${until.toISOString()}`, renew);
  if (new Date(cert.validFrom).getTime() > now.getTime()) {
    return fail(p.name, `not valid before ${new Date(cert.validFrom).toISOString()}`, renew);
  }
  if (days < EXPIRY_WARNING_DAYS) return warn(p.name, `expires on ${until.toISOString()} (in ${days} days)`, renew);
  if (!cert.checkHost(host)) {
    return warn(p.name, `the certificate does not name ${host} (MX_HOST): clients that verify will refuse it`, fix);
  }
  return ok(
    p.name,
    `${cert.subject.replace(/\n/g, ', ')}, key matches, valid until ${until.toISOString().slice(0, 10)}`,
  );
}

export async function tlsChecks(config: ToolConfig, now = new Date()): Promise<Check[]> {
  return await Promise.all([
    certificateCheck(
      {
        name: 'TLS relay',
        cert: config.relayTlsCert,
        key: config.relayTlsKey,
        vars: ['RELAY_TLS_CERT', 'RELAY_TLS_KEY'],
        unset: { message: 'not set: the relay uses a self-signed certificate (development only)' },
      },
      config.mxHost,
      now,
    ),
    certificateCheck(
      {
        name: 'TLS MX',
        cert: config.mxTlsCert,
        key: config.mxTlsKey,
        vars: ['MX_TLS_CERT', 'MX_TLS_KEY'],
        unset: { message: "not set: the MX offers STARTTLS with smtp-server's built-in test certificate" },
      },
      config.mxHost,
      now,
    ),
  ]);
}
