// Can this install send mail at all? Used by `npm start` (the delivery mode in its banner) and
// by `tern doctor`. With SMTP_SMARTHOST: the smarthost answers EHLO (and accepts the credentials
// of the URL). Without: the MX of a well-known receiving domain (gmail.com unless told otherwise,
// looked up through DNS_SERVERS) answers EHLO on OUTBOUND_PORT; many networks block port 25.
import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Config } from '../../config.js';
import { createResolver } from '../../domains/verify.js';
import { smarthostTarget } from './route.js';
import type { Target } from './types.js';

export type OutboundMode = 'smarthost' | 'direct';

export interface ProbeResult {
  mode: OutboundMode;
  ok: boolean;
  /** host:port dialled (or the domain whose MX could not be found). */
  target: string;
  /** What happened, one line. */
  detail: string;
  /** The local address the kernel uses towards the target (the outbound address), when known. */
  localAddress: string | null;
  /** Direct mode: the MX look-up itself failed (nothing was dialled). */
  dnsFailed?: boolean;
}

export interface ProbeOptions {
  probeDomain?: string;
  timeoutMs?: number;
}

type ProbeConfig = Pick<Config, 'smtpSmarthost' | 'dnsServers' | 'outboundPort' | 'heloName'>;

/** EHLO (and AUTH when the target has credentials), then QUIT. Resolves with what went wrong, or null. */
export function smtpHandshake(target: Target, heloName: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const conn = new SMTPConnection({
      host: target.host,
      port: target.port,
      secure: target.secure,
      ...(target.name && isIP(target.name) === 0 ? { servername: target.name } : {}),
      name: heloName,
      opportunisticTLS: true,
      tls: { rejectUnauthorized: target.verifyTls },
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      allowInternalNetworkInterfaces: true,
    });
    let settled = false;
    const done = (why: string | null): void => {
      if (settled) return;
      settled = true;
      conn.quit();
      conn.close();
      resolve(why);
    };
    conn.on('error', (err: Error) => done(err.message));
    conn.connect((err?: Error | null) => {
      if (err) return done(err.message);
      if (!target.auth) return done(null);
      conn.login({ credentials: target.auth }, (e) => done(e ? `AUTH refused: ${e.message}` : null));
    });
  });
}

/** The source address the kernel picks towards host:port (a connected UDP socket sends nothing). */
export function localAddressTowards(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    socket.once('error', () => {
      socket.close();
      resolve(null);
    });
    socket.connect(port, host, () => {
      const { address } = socket.address();
      socket.close();
      resolve(address);
    });
  });
}

export async function probeOutbound(config: ProbeConfig, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  if (config.smtpSmarthost) {
    const target = smarthostTarget(config.smtpSmarthost);
    const where = `${target.host}:${target.port}`;
    const why = await smtpHandshake(target, config.heloName, timeoutMs);
    const localAddress = await localAddressTowards(target.host, target.port);
    return { mode: 'smarthost', ok: why === null, target: where, detail: why ?? 'answered EHLO', localAddress };
  }
  const domain = opts.probeDomain ?? 'gmail.com';
  const resolver = createResolver(config.dnsServers, timeoutMs);
  let host: string;
  try {
    const mx = (await resolver.resolveMx(domain)).sort((a, b) => a.priority - b.priority);
    if (!mx[0]) throw Object.assign(new Error('no MX record'), { code: 'ENODATA' });
    const name = mx[0].exchange.replace(/\.$/, '');
    host = isIP(name) ? name : ((await resolver.resolve4(name))[0] ?? name);
    const target: Target = { host, name, port: config.outboundPort, secure: false, verifyTls: false };
    const where = `${name}:${config.outboundPort}`;
    const why = await smtpHandshake(target, config.heloName, timeoutMs);
    const localAddress = await localAddressTowards(host, config.outboundPort);
    return { mode: 'direct', ok: why === null, target: where, detail: why ?? 'answered EHLO', localAddress };
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    return {
      mode: 'direct',
      ok: false,
      target: domain,
      detail: `DNS look-up of the MX of ${domain} failed (${code})`,
      localAddress: null,
      dnsFailed: true,
    };
  }
}
