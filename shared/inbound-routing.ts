// Which recipients the MX takes, and what becomes of each (docs/inbound.md). Shared by the MX
// (RCPT TO), the HTTP intake, and the inbound worker, which routes the stored envelope again to
// act on each recipient. Of a verified domain <d>:
//   *@reply.<d>                  a reply: stored, email.received;
//   b+<token>@bounces.<d>        the VERP return path (DSNs, ARF), token HMAC-checked;
//   u+<token>@bounces.<d>        the List-Unsubscribe mailto;
//   SRS0=…@bounces.<d>           the envelope sender of a forwarded copy (its bounces);
//   dmarc@bounces.<d>            DMARC aggregate reports (the suggested `rua`);
//   *@<d>                        when <d> has inbound enabled: the route it matches (webhook or
//                                forward; `reject` and no match refuse it).
import type { Db } from './db/pool.js';
import { verifiedDomainByName, type ReplyRoute } from './db/inbound.js';
import { inboundOf, matchRoute, type InboundRoute } from './domains/inbound-routes.js';
import type { Logger } from './logger.js';
import { isSrsAddress, parseSrsAddress } from './mail/srs.js';
import { parseVerpToken } from './mail/verp.js';

export type RcptKind = 'reply' | 'verp' | 'unsubscribe' | 'srs' | 'dmarc' | 'routed';

export interface RcptRoute extends ReplyRoute {
  kind: RcptKind;
  address: string;
  /** The route a `routed` recipient matched (never `reject`). */
  route: InboundRoute | null;
}

export interface RoutingDeps {
  sql: Db;
  config: { secretKey: string };
  logger: Logger;
}

/** The recipient's mailbox at bounces.<domain>: which of the fixed addresses it is, or null. */
function bounceKind(deps: RoutingDeps, address: string, local: string): RcptKind | null {
  const tagged = /^([bu])\+(.+)$/i.exec(local);
  if (tagged) {
    if (parseVerpToken(tagged[2]!, deps.config.secretKey))
      return tagged[1]!.toLowerCase() === 'b' ? 'verp' : 'unsubscribe';
    deps.logger.warn({ event: 'INBOUND_BAD_VERP', rcpt: address }, 'VERP token does not verify; refused');
    return null;
  }
  if (isSrsAddress(local)) {
    if (parseSrsAddress(address, deps.config.secretKey)) return 'srs';
    deps.logger.warn({ event: 'INBOUND_BAD_SRS', rcpt: address }, 'SRS address does not verify or expired; refused');
    return null;
  }
  return local.toLowerCase() === 'dmarc' ? 'dmarc' : null;
}

/** Routes one recipient address; null refuses it (550 5.1.1 at the MX). */
export async function routeRecipient(deps: RoutingDeps, address: string): Promise<RcptRoute | null> {
  const at = address.lastIndexOf('@');
  if (at < 1) return null;
  const local = address.slice(0, at);
  const host = address.slice(at + 1).toLowerCase();
  const sub = /^(reply|bounces)\.(.+)$/.exec(host);
  if (sub) {
    const domain = await verifiedDomainByName(deps.sql, sub[2]!);
    if (domain) {
      const kind = sub[1] === 'reply' ? 'reply' : bounceKind(deps, address, local);
      return kind ? { ...domain, kind, address, route: null } : null;
    }
    // Not a subdomain of a verified domain: perhaps a verified domain of its own name.
  }
  const domain = await verifiedDomainByName(deps.sql, host);
  const settings = domain ? inboundOf(domain.inbound) : null;
  if (!domain || !settings?.enabled) return null;
  const route = matchRoute(settings, address);
  if (!route || route.action === 'reject') return null;
  return { ...domain, kind: 'routed', address, route };
}
