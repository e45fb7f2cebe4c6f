// Can mail leave, and will receivers trust where it comes from: outbound port 25 (or the
// smarthost) answers EHLO, and the outbound address's reverse DNS names the EHLO name, which
// resolves back to it (forward-confirmed reverse DNS: receivers such as Gmail require it).
import type { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { ToolConfig } from '../../../shared/config.js';
import { probeOutbound, type ProbeResult } from '../../../shared/mail/outbound/probe.js';
import { redactUrl } from '../command.js';
import { fail, ok, warn, type Check } from './check.js';

export function outboundCheck(config: ToolConfig, probe: ProbeResult): Check {
  if (probe.mode === 'smarthost') {
    const url = redactUrl(config.smtpSmarthost ?? '');
    return probe.ok
      ? ok('outbound SMTP', `smarthost ${url} answered EHLO`)
      : fail(
          'outbound SMTP',
          `smarthost ${url} does not answer: ${probe.detail}`,
          'check SMTP_SMARTHOST (host, port, user and password) and that this host may reach it',
        );
  }
  const smarthost = 'set SMTP_SMARTHOST=smtp://user:password@host:587';
  if (probe.ok) return ok('outbound SMTP', `direct to MX: ${probe.target} answered EHLO`);
  // Nothing was dialled when the MX look-up failed: the port is not the question yet.
  const resolvers =
    config.dnsServers.length > 0
      ? `DNS_SERVERS (${config.dnsServers.join(', ')}) answer`
      : `the system's resolvers (/etc/resolv.conf; DNS_SERVERS is unset) answer`;
  const fix = probe.dnsFailed
    ? `check that ${resolvers} from this host (MX look-ups go through them), or set DNS_SERVERS, or ${smarthost}`
    : `open outbound TCP port ${config.outboundPort} (many clouds block it until asked), or ${smarthost}`;
  return fail('outbound SMTP', `direct to MX: ${probe.target}: ${probe.detail}`, fix);
}

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA']);

/** The PTR name of an address (`1.0.0.127.in-addr.arpa`, or the ip6.arpa nibbles). */
export function ptrName(address: string): string {
  if (isIP(address) === 4) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  const [head = '', tail = ''] = address.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const full = [...groups(head), ...Array<string>(address.includes('::') ? missing : 0).fill('0'), ...groups(tail)];
  const nibbles = full.map((g) => g.padStart(4, '0')).join('');
  return `${[...nibbles].reverse().join('.')}.ip6.arpa`;
}
export const clean = (n: string) => n.toLowerCase().replace(/\.$/, '');

export async function reverseDnsCheck(config: ToolConfig, probe: ProbeResult, resolver: Resolver): Promise<Check> {
  if (probe.mode === 'smarthost') {
    return ok('reverse DNS', 'not needed here: the smarthost sends the mail (its own reverse DNS counts)');
  }
  const address = probe.localAddress;
  if (!address) {
    return warn(
      'reverse DNS',
      'the outbound address is unknown: the outbound check failed first',
      'fix outbound SMTP first',
    );
  }
  return await confirmedReverseDns(address, clean(config.heloName), resolver, {
    source: 'HELO_NAME',
    rename: (ptr) => `set HELO_NAME=${ptr}`,
  });
}

/**
 * Forward-confirmed reverse DNS of one sending address: its PTR names `helo`, which resolves back
 * to it. `how.source` says where the EHLO name is set; `how.rename` how to use the PTR's name
 * instead.
 */
export async function confirmedReverseDns(
  address: string,
  helo: string,
  resolver: Resolver,
  how: { source: string; rename: (ptr: string) => string },
): Promise<Check> {
  const name = `reverse DNS ${address}`;
  const setPtr = `ask whoever runs ${address} (the hosting provider) to set its PTR record to ${helo}`;
  let names: string[];
  try {
    // A DNS query, not resolver.reverse(), which answers from /etc/hosts first.
    names = (await resolver.resolvePtr(ptrName(address))).map(clean);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (NOT_FOUND.has(code)) return fail(name, `no PTR record for ${address}`, setPtr);
    return warn(
      name,
      `the PTR look-up of ${address} did not answer (${code})`,
      'check DNS_SERVERS, then run tern doctor again',
    );
  }
  if (!names.includes(helo)) {
    return fail(
      name,
      `PTR is ${names.join(', ')}, not the EHLO name ${helo} (${how.source})`,
      `${setPtr}, or ${how.rename(names[0]!)} if that name resolves back to ${address}`,
    );
  }
  const forward = await Promise.allSettled([resolver.resolve4(helo), resolver.resolve6(helo)]);
  const addresses = forward.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  if (!addresses.includes(address)) {
    return fail(
      name,
      `PTR names ${helo}, but ${helo} does not resolve back to ${address}`,
      `publish A (or AAAA) ${helo} → ${address}`,
    );
  }
  return ok(name, `${address} ↔ ${helo} (PTR and A agree with the EHLO name)`);
}

export async function outboundChecks(config: ToolConfig, resolver: Resolver, probeDomain: string): Promise<Check[]> {
  const probe = await probeOutbound(config, { probeDomain, timeoutMs: 5000 });
  return [outboundCheck(config, probe), await reverseDnsCheck(config, probe, resolver)];
}
