// SPF, DKIM and DMARC of a received message's sender (mailauth), as `email.received` and
// GET /inbound/{id} show them: `{spf, dkim, dmarc}`, each one result word of RFC 8601 (pass, fail,
// softfail, neutral, none, temperror, permerror). DNS goes through DNS_SERVERS (the system's
// resolvers when unset), each query with a short timeout: a lookup that does not answer makes a
// `temperror`, never a stuck job.
import { authenticate } from 'mailauth';
import { createResolver } from '../domains/verify.js';

export interface InboundAuth {
  spf: string;
  dkim: string;
  dmarc: string;
}

export interface AuthInput {
  raw: Buffer;
  /** The connecting client's address; null (HTTP intake without X-Tern-Client-Ip): SPF is `none`. */
  ip: string | null;
  helo: string | null;
  /** MAIL FROM; null or empty for a null sender (SPF then checks the HELO name). */
  sender: string | null;
  /** This MX's host name (the authserv-id). */
  mta: string;
  dnsServers: string[];
  timeoutMs?: number;
}

const NONE: InboundAuth = { spf: 'none', dkim: 'none', dmarc: 'none' };

/** The best DKIM outcome among the signatures: pass if any passes, else the first one's. */
function dkimOutcome(results: { status: { result: string } }[]): string {
  if (results.some((r) => r.status.result === 'pass')) return 'pass';
  return results[0]?.status.result ?? 'none';
}

function word(result: string | undefined): string {
  // mailauth writes `temperr` in places; RFC 8601 says temperror.
  return result === 'temperr' ? 'temperror' : (result ?? 'none');
}

export async function authenticateInbound(input: AuthInput): Promise<InboundAuth> {
  const resolver = createResolver(input.dnsServers, input.timeoutMs ?? 3000);
  const res = await authenticate(input.raw, {
    ...(input.ip ? { ip: input.ip } : {}),
    ...(input.helo ? { helo: input.helo } : {}),
    ...(input.sender ? { sender: input.sender } : {}),
    mta: input.mta,
    disableArc: true,
    disableBimi: true,
    resolver: (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>,
  }).catch(() => null);
  if (!res) return { ...NONE, spf: 'temperror', dkim: 'temperror', dmarc: 'temperror' };
  return {
    spf: input.ip && res.spf ? word(res.spf.status.result) : 'none',
    dkim: word(dkimOutcome(res.dkim.results)),
    dmarc: res.dmarc ? word(res.dmarc.status.result) : 'none',
  };
}
