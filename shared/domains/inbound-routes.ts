// A domain's inbound settings (docs/inbound.md "Routes"): whether the MX receives on the domain's
// own addresses, and the routes a recipient is matched against. A route's `match` is one of
//   `local@domain`      an exact address (with its `+tag`, if written with one);
//   `local@domain` also matches `local+anything@domain` (the tag becomes the mailbox hash);
//   `*@domain`          any address of the domain;
//   `*`                 the catch-all, tried last.
// The most specific match wins whatever the order of the list; among equals, the first listed.
// A recipient no route matches is refused at RCPT, as a `reject` route refuses it.
import { parseAddress } from '../mail/addresses.js';

export type InboundAction = 'webhook' | 'forward' | 'reject';

export interface InboundRoute {
  match: string;
  action: InboundAction;
  forward_to?: string;
  /** With RSPAMD_URL: a message scored above this is refused for this route. */
  spam_threshold?: number;
}

export interface InboundSettings {
  enabled: boolean;
  routes: InboundRoute[];
}

export const DEFAULT_INBOUND: InboundSettings = { enabled: false, routes: [] };

export const MAX_ROUTES = 100;

/** The settings as stored (the column's default when absent or malformed). */
export function inboundOf(value: unknown): InboundSettings {
  const v = value as Partial<InboundSettings> | null;
  if (!v || typeof v !== 'object' || !Array.isArray(v.routes)) return DEFAULT_INBOUND;
  return { enabled: v.enabled === true, routes: v.routes };
}

/** The part after the first `+` of a local part (`support+1234` → `1234`), or null. */
export function mailboxHashOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  const local = at < 0 ? address : address.slice(0, at);
  const plus = local.indexOf('+');
  return plus < 0 || plus === local.length - 1 ? null : local.slice(plus + 1);
}

/**
 * Normalised routes for `domain`, or the reason they are refused (the API's 422 message names
 * `body.inbound.routes[i]`). Matches are lower-cased; an address must be of `domain` itself.
 */
export function normaliseRoutes(domain: string, routes: InboundRoute[]): InboundRoute[] | string {
  const out: InboundRoute[] = [];
  for (const [i, r] of routes.entries()) {
    const where = `body.inbound.routes[${i}]`;
    const match = r.match.trim().toLowerCase();
    if (match !== '*') {
      const at = match.lastIndexOf('@');
      const local = match.slice(0, at);
      if (at < 1 || match.slice(at + 1) !== domain) {
        return `${where}.match must be "*", "*@${domain}" or an address of ${domain}`;
      }
      if (local !== '*' && !/^[a-z0-9!#$%&'*/=?^_`{|}~.+-]{1,64}$/.test(local)) {
        return `${where}.match: "${local}" is not a valid local part`;
      }
    }
    if (r.action === 'forward' && !r.forward_to) return `${where}.forward_to is required when action is "forward"`;
    if (r.action !== 'forward' && r.forward_to !== undefined) return `${where}.forward_to is only for action "forward"`;
    if (r.action === 'reject' && r.spam_threshold !== undefined) {
      return `${where}.spam_threshold is only for action "webhook" or "forward"`;
    }
    const threshold = r.spam_threshold === undefined ? {} : { spam_threshold: r.spam_threshold };
    if (r.forward_to === undefined) {
      out.push({ match, action: r.action, ...threshold });
      continue;
    }
    const target = parseAddress(r.forward_to.trim());
    if (!target.ok) return `${where}.forward_to ${target.reason}`;
    out.push({ match, action: r.action, forward_to: target.mailbox.email, ...threshold });
  }
  return out;
}

/** How specific a route is for `address` (lower is better), or null when it does not match. */
function rank(match: string, address: string): number | null {
  if (match === address) return 0;
  if (match === '*') return 3;
  const at = address.lastIndexOf('@');
  if (match === `*${address.slice(at)}`) return 2;
  const plus = address.indexOf('+');
  if (plus > 0 && plus < at && match === address.slice(0, plus) + address.slice(at)) return 1;
  return null;
}

/** The route `address` (of the domain) takes, or null: nothing matches, refuse it. */
export function matchRoute(settings: InboundSettings, address: string): InboundRoute | null {
  const addr = address.toLowerCase();
  let best: { route: InboundRoute; rank: number } | null = null;
  for (const route of settings.routes) {
    const r = rank(route.match, addr);
    if (r !== null && (best === null || r < best.rank)) best = { route, rank: r };
  }
  return best?.route ?? null;
}
