// The addresses this install sends from, as the DMARC summary's `own` flag judges a source: what
// the SPF record Tern publishes authorises (`a:<MX_HOST>`: the A and AAAA records of MX_HOST),
// those of HELO_NAME, the host's own non-loopback interface addresses (looked up through
// DNS_SERVERS and kept for five minutes), and the addresses of its IP pools (read each time).
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Config } from '../config.js';
import { listPoolAddresses } from '../db/ip-pools.js';
import type { Db } from '../db/pool.js';
import { createResolver } from './verify.js';

const TTL_MS = 5 * 60_000;
let cached: { key: string; at: number; addresses: Promise<Set<string>> } | null = null;

/** Lower-case, IPv4-mapped IPv6 written as IPv4: one spelling per address. */
export function normaliseIp(ip: string): string {
  const v = ip.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v);
  return mapped ? mapped[1]! : v;
}

async function lookup(config: Pick<Config, 'mxHost' | 'heloName' | 'dnsServers'>): Promise<Set<string>> {
  const out = new Set<string>();
  const resolver = createResolver(config.dnsServers, 2000);
  for (const host of new Set([config.mxHost, config.heloName])) {
    if (isIP(host)) {
      out.add(normaliseIp(host));
      continue;
    }
    const found = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    for (const r of found) if (r.status === 'fulfilled') for (const a of r.value) out.add(normaliseIp(a));
  }
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (!i.internal) out.add(normaliseIp(i.address));
  }
  return out;
}

export function ownAddresses(config: Pick<Config, 'mxHost' | 'heloName' | 'dnsServers'>): Promise<Set<string>> {
  const key = `${config.mxHost}|${config.heloName}|${config.dnsServers.join(',')}`;
  if (!cached || cached.key !== key || Date.now() - cached.at > TTL_MS) {
    cached = { key, at: Date.now(), addresses: lookup(config) };
  }
  return cached.addresses;
}

/** `ownAddresses` and the addresses of the install's IP pools. */
export async function installAddresses(
  db: Db,
  config: Pick<Config, 'mxHost' | 'heloName' | 'dnsServers'>,
): Promise<Set<string>> {
  const [own, pools] = await Promise.all([ownAddresses(config), listPoolAddresses(db)]);
  return new Set([...own, ...pools.map(normaliseIp)]);
}
