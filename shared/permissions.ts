// The permission table (SPEC "Permissions", DESIGN §4): every API route declares here, and only
// here, the tier it needs, whether it takes live keys only, what a domain-restricted key may do,
// and whether it is a sending route (refused while sending is paused). The router is built from
// this table; a handler without a row, or a row without a handler, stops the app from starting.
import type { Permission } from './keys.js';

export type Tier = Permission | 'ANY';

/**
 * What a domain-restricted key may do on the route:
 * - `allow`: same as an unrestricted key (e.g. GET /keys/me);
 * - `scoped`: allowed, and the handler limits it to its own domains (404 / 403 forbidden_domain);
 * - `deny`: 403 forbidden_domain before the handler runs.
 */
export type RestrictedRule = 'allow' | 'scoped' | 'deny';

export interface RouteRule {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Koa-router path under /api/v1, with `:param` segments. */
  path: string;
  tier: Tier;
  liveOnly: boolean;
  restricted: RestrictedRule;
  /** A sending route: 403 sending_paused while the organization is paused. */
  sending: boolean;
  /** Largest accepted request body in bytes (default: config bodyLimitBytes). */
  bodyLimit?: number;
}

type Row = [RouteRule['method'], string, Tier, 'live' | 'any', RestrictedRule, 'send'?, number?];

// method, path, tier, live-only, restricted-key rule, sending route, body limit
const ROWS: Row[] = [
  // keys (foundation)
  ['GET', '/keys/me', 'ANY', 'any', 'allow'],
  ['GET', '/keys', 'ADMIN', 'live', 'allow'],
  ['POST', '/keys', 'ADMIN', 'live', 'scoped'],
  ['GET', '/keys/:id', 'ADMIN', 'live', 'allow'],
  ['DELETE', '/keys/:id', 'ADMIN', 'live', 'allow'],
  ['POST', '/keys/:id/rotate', 'ADMIN', 'live', 'allow'],

  // organization

  // domains

  // emails

  // templates
  ['POST', '/templates', 'SEND', 'any', 'allow'],
  ['GET', '/templates', 'SEND', 'any', 'allow'],
  ['GET', '/templates/:id', 'SEND', 'any', 'allow'],
  ['PATCH', '/templates/:id', 'SEND', 'any', 'allow'],
  ['POST', '/templates/:id/publish', 'SEND', 'any', 'allow'],
  ['DELETE', '/templates/:id', 'FULL', 'any', 'allow'],

  // suppressions
  ['POST', '/suppressions', 'SEND', 'any', 'scoped'],
  ['GET', '/suppressions', 'SEND', 'any', 'scoped'],
  ['GET', '/suppressions/:id', 'SEND', 'any', 'scoped'],
  ['DELETE', '/suppressions/:id', 'FULL', 'live', 'scoped'],

  // webhooks

  // metrics

  // inbound (POST /inbound/raw is not here: it takes the install's INBOUND_SECRET, not an API key)
  ['GET', '/inbound', 'SEND', 'any', 'scoped'],
  ['GET', '/inbound/:id', 'SEND', 'any', 'scoped'],
];

export const ROUTES: readonly RouteRule[] = ROWS.map(([method, path, tier, live, restricted, sending, bodyLimit]) => ({
  method,
  path,
  tier,
  liveOnly: live === 'live',
  restricted,
  sending: sending === 'send',
  ...(bodyLimit !== undefined ? { bodyLimit } : {}),
}));

export function routeId(rule: Pick<RouteRule, 'method' | 'path'>): string {
  return `${rule.method} ${rule.path}`;
}
