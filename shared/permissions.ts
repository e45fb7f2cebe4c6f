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
  /** Honours the Idempotency-Key header (api/middleware/idempotency.ts). */
  idempotent: boolean;
}

type Row = [
  RouteRule['method'],
  string,
  Tier,
  'live' | 'any',
  RestrictedRule,
  ('send' | undefined)?,
  (number | undefined)?,
  'idempotent'?,
];

/** 40 MB of attachments in base64 (4/3) plus the rest of the message. */
const SEND_BODY_LIMIT = 56 * 1024 * 1024;

// method, path, tier, live-only, restricted-key rule, sending route, body limit, idempotency
const ROWS: Row[] = [
  // keys (foundation)
  ['GET', '/keys/me', 'ANY', 'any', 'allow'],
  ['GET', '/keys', 'ADMIN', 'live', 'allow'],
  ['POST', '/keys', 'ADMIN', 'live', 'scoped'],
  ['GET', '/keys/:id', 'ADMIN', 'live', 'allow'],
  // A restricted key revokes and rotates only keys restricted within its domains.
  ['DELETE', '/keys/:id', 'ADMIN', 'live', 'scoped'],
  ['POST', '/keys/:id/rotate', 'ADMIN', 'live', 'scoped'],

  // organization
  ['GET', '/organization', 'ADMIN', 'live', 'allow'],
  // Org-wide settings reach beyond a restricted key's domains.
  ['PATCH', '/organization', 'ADMIN', 'live', 'deny'],

  // domains
  // A restricted key sees and manages only its own domains; a new domain is outside its set.
  ['POST', '/domains', 'ADMIN', 'live', 'deny'],
  ['GET', '/domains', 'ADMIN', 'live', 'scoped'],
  ['GET', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['PATCH', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['DELETE', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['POST', '/domains/:id/verify', 'ADMIN', 'live', 'scoped'],

  // emails
  ['POST', '/emails', 'SEND', 'any', 'scoped', 'send', SEND_BODY_LIMIT, 'idempotent'],
  ['POST', '/emails/batch', 'SEND', 'any', 'scoped', 'send', 32 * 1024 * 1024, 'idempotent'],
  ['GET', '/emails', 'SEND', 'any', 'scoped'],
  ['GET', '/emails/:id', 'SEND', 'any', 'scoped'],
  ['GET', '/emails/:id/events', 'SEND', 'any', 'scoped'],
  ['PATCH', '/emails/:id', 'SEND', 'any', 'scoped'],
  ['POST', '/emails/:id/cancel', 'SEND', 'any', 'scoped'],

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

  // webhooks (org-wide: they carry every domain's events, so a domain-restricted key is refused)
  ['POST', '/webhooks', 'ADMIN', 'live', 'deny'],
  ['GET', '/webhooks', 'ADMIN', 'live', 'deny'],
  ['GET', '/webhooks/:id', 'ADMIN', 'live', 'deny'],
  ['PATCH', '/webhooks/:id', 'ADMIN', 'live', 'deny'],
  ['DELETE', '/webhooks/:id', 'ADMIN', 'live', 'deny'],
  ['POST', '/webhooks/:id/rotate-secret', 'ADMIN', 'live', 'deny'],
  ['GET', '/webhooks/:id/deliveries', 'ADMIN', 'live', 'deny'],
  ['POST', '/webhooks/:id/deliveries/:delivery_id/retry', 'ADMIN', 'live', 'deny'],
  ['POST', '/webhooks/:id/test', 'ADMIN', 'live', 'deny'],

  // metrics
  ['GET', '/metrics', 'ANY', 'any', 'scoped'],

  // inbound (POST /inbound/raw is not here: it takes the install's INBOUND_SECRET, not an API key)
  ['GET', '/inbound', 'SEND', 'any', 'scoped'],
  ['GET', '/inbound/:id', 'SEND', 'any', 'scoped'],

  // contacts (org-wide, not per domain: a restricted key may upsert (list signup, no automations),
  // read and rename them, but not change subscriptions (checked in the handler) nor delete them)
  ['POST', '/contacts', 'SEND', 'any', 'scoped'],
  ['GET', '/contacts', 'SEND', 'any', 'allow'],
  ['GET', '/contacts/:id', 'SEND', 'any', 'allow'],
  ['PATCH', '/contacts/:id', 'SEND', 'any', 'scoped'],
  ['DELETE', '/contacts/:id', 'FULL', 'live', 'deny'],
  ['POST', '/contacts/:id/subscriptions', 'SEND', 'any', 'deny'],
  ['GET', '/contacts/:id/subscriptions', 'SEND', 'any', 'allow'],
  // Resend SDK shapes: a contact's topics, and contacts under an (ignored) audience id.
  ['PATCH', '/contacts/:id/topics', 'SEND', 'any', 'deny'],
  ['GET', '/contacts/:id/topics', 'SEND', 'any', 'allow'],
  ['POST', '/audiences/:audience_id/contacts', 'SEND', 'any', 'scoped'],
  ['GET', '/audiences/:audience_id/contacts', 'SEND', 'any', 'allow'],
  ['GET', '/audiences/:audience_id/contacts/:id', 'SEND', 'any', 'allow'],
  ['PATCH', '/audiences/:audience_id/contacts/:id', 'SEND', 'any', 'scoped'],
  ['DELETE', '/audiences/:audience_id/contacts/:id', 'FULL', 'live', 'deny'],

  // topics (org-wide settings: a restricted key may read them, not change them)
  ['POST', '/topics', 'ADMIN', 'live', 'deny'],
  ['GET', '/topics', 'ADMIN', 'live', 'allow'],
  ['GET', '/topics/:id', 'ADMIN', 'live', 'allow'],
  ['PATCH', '/topics/:id', 'ADMIN', 'live', 'deny'],
  ['DELETE', '/topics/:id', 'ADMIN', 'live', 'deny'],

  // segments (as topics)
  ['POST', '/segments', 'ADMIN', 'live', 'deny'],
  ['GET', '/segments', 'ADMIN', 'live', 'allow'],
  ['GET', '/segments/:id', 'ADMIN', 'live', 'allow'],
  ['PATCH', '/segments/:id', 'ADMIN', 'live', 'deny'],
  ['DELETE', '/segments/:id', 'ADMIN', 'live', 'deny'],
  ['GET', '/segments/:id/contacts', 'ADMIN', 'live', 'allow'],

  // events (custom events for automations; not the message event log)
  ['POST', '/events', 'SEND', 'any', 'deny', undefined, undefined, 'idempotent'],
];

export const ROUTES: readonly RouteRule[] = ROWS.map(
  ([method, path, tier, live, restricted, sending, bodyLimit, idempotent]) => ({
    method,
    path,
    tier,
    liveOnly: live === 'live',
    restricted,
    sending: sending === 'send',
    ...(bodyLimit !== undefined ? { bodyLimit } : {}),
    idempotent: idempotent === 'idempotent',
  }),
);

export function routeId(rule: Pick<RouteRule, 'method' | 'path'>): string {
  return `${rule.method} ${rule.path}`;
}
