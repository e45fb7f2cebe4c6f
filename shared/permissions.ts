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
  /** Route path (api/router.ts) under /api/v1, with `:param` segments. */
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
  /** Name of the ajv schema the JSON body is validated with (api/schemas/registry.ts). */
  body?: string;
  /** Name of the ajv schema the query string is validated with. */
  query?: string;
  /**
   * The body is a file the handler streams itself (api/uploads.ts: `text/csv` or
   * `multipart/form-data`), up to `bodyLimit`; no JSON body is read before the handler.
   */
  upload?: boolean;
  /**
   * Resend's path for a route Tern has under its own (DESIGN §21): the route id (`METHOD /path`)
   * whose tier, rules, schemas and handler this row takes.
   */
  aliasOf?: string;
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

// Body limits of the sending routes: each holds a request at every maximum of its schema
// (api/schemas/emails.ts) written in ASCII JSON with unwrapped base64, with room to spare;
// test/unit/email-limits.test.ts builds those requests and checks that they fit.
/** POST /emails: 40 MiB of attachments (55.9 MB in base64), 5 MiB each of html and text, and the
 * rest (addresses, headers, tags): 66.7 MB at most. */
const SEND_BODY_LIMIT = 72 * 1024 * 1024;
/** POST /emails/batch: 100 items of at most 1.21 MB each (512 KiB of attachments in base64,
 * 128 KiB each of html and text, 150 recipients and 50 reply-to addresses of 512 characters,
 * 50 headers, 50 tags): 120.7 MB at most. */
const BATCH_BODY_LIMIT = 128 * 1024 * 1024;
/** A contact import: up to 1,000,000 rows in 200 MiB of CSV (api/routes/contact-imports.ts). */
export const CONTACT_IMPORT_MAX_BYTES = 200 * 1024 * 1024;
/** A suppression list, read within its request (api/routes/suppressions-bulk.ts). */
export const SUPPRESSION_IMPORT_MAX_BYTES = 64 * 1024 * 1024;

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
  // Who changed what: org-wide, so a domain-restricted key is refused.
  ['GET', '/audit-log', 'ADMIN', 'live', 'deny'],

  // domains
  // A restricted key sees and manages only its own domains; a new domain is outside its set.
  ['POST', '/domains', 'ADMIN', 'live', 'deny'],
  ['GET', '/domains', 'ADMIN', 'live', 'scoped'],
  ['GET', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['PATCH', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['DELETE', '/domains/:id', 'ADMIN', 'live', 'scoped'],
  ['POST', '/domains/:id/verify', 'ADMIN', 'live', 'scoped'],
  ['GET', '/domains/:id/dmarc', 'ADMIN', 'live', 'scoped'],

  // emails
  ['POST', '/emails', 'SEND', 'any', 'scoped', 'send', SEND_BODY_LIMIT, 'idempotent'],
  ['POST', '/emails/batch', 'SEND', 'any', 'scoped', 'send', BATCH_BODY_LIMIT, 'idempotent'],
  ['GET', '/emails', 'SEND', 'any', 'scoped'],
  ['GET', '/emails/:id', 'SEND', 'any', 'scoped'],
  ['GET', '/emails/:id/events', 'SEND', 'any', 'scoped'],
  // The MIME as handed over (the development inbox): visible exactly as GET /emails/{id}.
  ['GET', '/emails/:id/raw', 'SEND', 'any', 'scoped'],
  ['PATCH', '/emails/:id', 'SEND', 'any', 'scoped'],
  ['POST', '/emails/:id/cancel', 'SEND', 'any', 'scoped'],

  // templates
  ['POST', '/templates', 'SEND', 'any', 'allow'],
  ['GET', '/templates', 'SEND', 'any', 'allow'],
  ['GET', '/templates/:id', 'SEND', 'any', 'allow'],
  ['PATCH', '/templates/:id', 'SEND', 'any', 'allow'],
  ['POST', '/templates/:id/publish', 'SEND', 'any', 'allow'],
  ['POST', '/templates/:id/duplicate', 'SEND', 'any', 'allow'],
  ['DELETE', '/templates/:id', 'FULL', 'any', 'allow'],

  // suppressions
  ['POST', '/suppressions', 'SEND', 'any', 'scoped'],
  ['GET', '/suppressions', 'SEND', 'any', 'scoped'],
  // In bulk: a CSV of addresses and rules in (rows as POST /suppressions adds them), the list out.
  ['POST', '/suppressions/imports', 'SEND', 'any', 'scoped', undefined, SUPPRESSION_IMPORT_MAX_BYTES],
  ['GET', '/suppressions/export', 'SEND', 'any', 'scoped'],
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

  // the request log (org-wide: every domain's requests, so a domain-restricted key is refused)
  ['GET', '/logs', 'FULL', 'any', 'deny'],
  ['GET', '/logs/:id', 'FULL', 'any', 'deny'],

  // inbound (POST /inbound/raw is not here: it takes the install's INBOUND_SECRET, not an API key)
  ['GET', '/inbound', 'SEND', 'any', 'scoped'],
  ['GET', '/inbound/:id', 'SEND', 'any', 'scoped'],
  ['GET', '/inbound/:id/attachments', 'SEND', 'any', 'scoped'],
  // Resend's emails.receiving.attachments.get: an attachment's metadata and download URL.
  ['GET', '/emails/receiving/:id/attachments/:attachment_id', 'SEND', 'any', 'scoped'],
  // The sender's bytes: the organization's administrators fetch them.
  ['GET', '/inbound/:id/attachments/:attachment_id', 'ADMIN', 'live', 'scoped'],

  // contacts (org-wide, not per domain: a restricted key may upsert (list signup, no automations),
  // read and rename them, but not change subscriptions (checked in the handler) nor delete them)
  ['POST', '/contacts', 'SEND', 'any', 'scoped'],
  ['GET', '/contacts', 'SEND', 'any', 'allow'],
  // Imports and exports in bulk: the whole audience at once, so ADMIN, live and unrestricted.
  ['POST', '/contacts/imports', 'ADMIN', 'live', 'deny', undefined, CONTACT_IMPORT_MAX_BYTES],
  ['GET', '/contacts/imports', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/imports/:id', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/imports/:id/errors', 'ADMIN', 'live', 'deny'],
  ['POST', '/contacts/exports', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/exports', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/exports/:id', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/exports/:id/download', 'ADMIN', 'live', 'deny'],
  ['GET', '/contacts/:id', 'SEND', 'any', 'allow'],
  ['PATCH', '/contacts/:id', 'SEND', 'any', 'scoped'],
  ['DELETE', '/contacts/:id', 'FULL', 'live', 'deny'],
  ['POST', '/contacts/:id/subscriptions', 'SEND', 'any', 'deny'],
  ['GET', '/contacts/:id/subscriptions', 'SEND', 'any', 'allow'],
  // Resend SDK shapes: a contact's topics, and contacts under an (ignored) audience id.
  ['PATCH', '/contacts/:id/topics', 'SEND', 'any', 'deny'],
  ['GET', '/contacts/:id/topics', 'SEND', 'any', 'allow'],
  // A contact's segments (Resend SDK): membership decides what a contact receives, as its
  // subscriptions do (closed to restricted keys); taking one out is a delete (FULL).
  ['POST', '/contacts/:id/segments/:segment_id', 'SEND', 'any', 'deny'],
  ['DELETE', '/contacts/:id/segments/:segment_id', 'FULL', 'any', 'deny'],
  ['GET', '/contacts/:id/segments', 'SEND', 'any', 'allow'],
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

  // broadcasts (restricted keys as for emails: from-domain its own, others' broadcasts 404).
  // Creating one with `send: true` checks the pause in the handler, as POST …/send does here.
  ['POST', '/broadcasts', 'SEND', 'any', 'scoped'],
  ['GET', '/broadcasts', 'SEND', 'any', 'scoped'],
  ['GET', '/broadcasts/:id', 'SEND', 'any', 'scoped'],
  ['PATCH', '/broadcasts/:id', 'SEND', 'any', 'scoped'],
  ['DELETE', '/broadcasts/:id', 'FULL', 'any', 'scoped'],
  ['POST', '/broadcasts/:id/send', 'SEND', 'any', 'scoped', 'send', undefined, 'idempotent'],
  ['POST', '/broadcasts/:id/cancel', 'SEND', 'any', 'scoped'],

  // automations (org-wide: they react to every contact and event, so restricted keys are refused)
  ['POST', '/automations', 'ADMIN', 'live', 'deny'],
  ['GET', '/automations', 'ADMIN', 'live', 'deny'],
  ['GET', '/automations/:id', 'ADMIN', 'live', 'deny'],
  ['PATCH', '/automations/:id', 'ADMIN', 'live', 'deny'],
  ['DELETE', '/automations/:id', 'ADMIN', 'live', 'deny'],
  ['GET', '/automations/:id/runs', 'ADMIN', 'live', 'deny'],
  ['GET', '/automations/:id/runs/:run_id', 'ADMIN', 'live', 'deny'],
];

// The schemas each route validates its request with, by name (api/schemas/registry.ts). The
// handler asks for the validator of the route that matched (api/route-schemas.ts), and the
// OpenAPI document (api/openapi/) shows the same schema: one source for both.
const SCHEMAS: Record<string, Pick<RouteRule, 'body' | 'query' | 'upload'>> = {
  'GET /keys': { query: 'ListKeysQuery' },
  'POST /keys': { body: 'CreateKey' },
  'POST /keys/:id/rotate': { body: 'RotateKey' },
  'PATCH /organization': { body: 'UpdateOrganization' },
  'GET /audit-log': { query: 'ListAuditLogQuery' },
  'POST /domains': { body: 'CreateDomain' },
  'GET /domains': { query: 'ListDomainsQuery' },
  'PATCH /domains/:id': { body: 'UpdateDomain' },
  'GET /domains/:id/dmarc': { query: 'DmarcQuery' },
  'POST /emails': { body: 'SendEmail' },
  'POST /emails/batch': { body: 'SendEmailBatch' },
  'GET /emails': { query: 'ListEmailsQuery' },
  'GET /emails/:id/events': { query: 'ListEmailEventsQuery' },
  'GET /emails/:id/raw': { query: 'RawEmailQuery' },
  'PATCH /emails/:id': { body: 'UpdateEmail' },
  'POST /templates': { body: 'CreateTemplate' },
  'GET /templates': { query: 'ListTemplatesQuery' },
  'PATCH /templates/:id': { body: 'UpdateTemplate' },
  'POST /suppressions': { body: 'CreateSuppression' },
  'GET /suppressions': { query: 'ListSuppressionsQuery' },
  'GET /suppressions/:id': { query: 'SuppressionRefQuery' },
  'POST /suppressions/imports': { query: 'SuppressionImportQuery', upload: true },
  'GET /suppressions/export': { query: 'SuppressionExportQuery' },
  'DELETE /suppressions/:id': { query: 'SuppressionRefQuery' },
  'POST /webhooks': { body: 'CreateWebhook' },
  'GET /webhooks': { query: 'ListWebhooksQuery' },
  'PATCH /webhooks/:id': { body: 'UpdateWebhook' },
  'POST /webhooks/:id/rotate-secret': { body: 'RotateWebhookSecret' },
  'GET /webhooks/:id/deliveries': { query: 'ListWebhookDeliveriesQuery' },
  'POST /webhooks/:id/test': { body: 'TestWebhook' },
  'GET /metrics': { query: 'MetricsQuery' },
  'GET /logs': { query: 'ListLogsQuery' },
  'GET /inbound': { query: 'ListInboundQuery' },
  'POST /contacts': { body: 'UpsertContact' },
  'GET /contacts': { query: 'ListContactsQuery' },
  'POST /contacts/imports': { query: 'ContactImportQuery', upload: true },
  'GET /contacts/imports': { query: 'ListContactImportsQuery' },
  'POST /contacts/exports': { body: 'CreateContactExport' },
  'GET /contacts/exports': { query: 'ListContactImportsQuery' },
  'PATCH /contacts/:id': { body: 'UpdateContact' },
  'POST /contacts/:id/subscriptions': { body: 'ContactSubscriptions' },
  'PATCH /contacts/:id/topics': { body: 'ContactTopicChoices' },
  'GET /contacts/:id/segments': { query: 'ListSegmentsQuery' },
  'POST /audiences/:audience_id/contacts': { body: 'UpsertContact' },
  'GET /audiences/:audience_id/contacts': { query: 'ListContactsQuery' },
  'PATCH /audiences/:audience_id/contacts/:id': { body: 'UpdateContact' },
  'POST /topics': { body: 'CreateTopic' },
  'GET /topics': { query: 'ListTopicsQuery' },
  'PATCH /topics/:id': { body: 'UpdateTopic' },
  'POST /segments': { body: 'CreateSegment' },
  'GET /segments': { query: 'ListSegmentsQuery' },
  'PATCH /segments/:id': { body: 'UpdateSegment' },
  'GET /segments/:id/contacts': { query: 'ListSegmentsQuery' },
  'POST /events': { body: 'PostEvent' },
  'POST /broadcasts': { body: 'CreateBroadcast' },
  'GET /broadcasts': { query: 'ListBroadcastsQuery' },
  'PATCH /broadcasts/:id': { body: 'UpdateBroadcast' },
  'POST /broadcasts/:id/send': { body: 'SendBroadcast' },
  'POST /automations': { body: 'CreateAutomation' },
  'GET /automations': { query: 'ListAutomationsQuery' },
  'PATCH /automations/:id': { body: 'UpdateAutomation' },
  'GET /automations/:id/runs': { query: 'ListAutomationRunsQuery' },
};

// Resend's paths for Tern's routes: method, Resend's path, Tern's path (the same parameters).
// Each is a row of its own (its path answers, shows in the OpenAPI document, is swept for
// tenancy) that takes everything else from the route it names: one definition, two paths.
const ALIASES: [RouteRule['method'], string, string][] = [
  ['POST', '/api-keys', '/keys'],
  ['GET', '/api-keys', '/keys'],
  ['DELETE', '/api-keys/:id', '/keys/:id'],
  ['POST', '/webhooks/:id/signing-secret/rotate', '/webhooks/:id/rotate-secret'],
  ['POST', '/events/send', '/events'],
  ['GET', '/emails/receiving', '/inbound'],
  ['GET', '/emails/receiving/:id', '/inbound/:id'],
  ['GET', '/emails/receiving/:id/attachments', '/inbound/:id/attachments'],
];

const OWN_ROUTES: RouteRule[] = ROWS.map(([method, path, tier, live, restricted, sending, bodyLimit, idempotent]) => ({
  method,
  path,
  tier,
  liveOnly: live === 'live',
  restricted,
  sending: sending === 'send',
  ...(bodyLimit !== undefined ? { bodyLimit } : {}),
  idempotent: idempotent === 'idempotent',
  ...SCHEMAS[`${method} ${path}`],
}));

const params = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]).join(',');

export const ROUTES: readonly RouteRule[] = [
  ...OWN_ROUTES,
  ...ALIASES.map(([method, path, target]): RouteRule => {
    const rule = OWN_ROUTES.find((r) => r.method === method && r.path === target);
    if (!rule) throw new Error(`alias ${method} ${path} names no route ${method} ${target}`);
    if (params(path) !== params(target)) throw new Error(`alias ${method} ${path} has other parameters than ${target}`);
    return { ...rule, path, aliasOf: routeId(rule) };
  }),
];

for (const id of Object.keys(SCHEMAS)) {
  if (!ROUTES.some((r) => routeId(r) === id)) throw new Error(`schema row "${id}" names no route`);
}

export function routeId(rule: Pick<RouteRule, 'method' | 'path'>): string {
  return `${rule.method} ${rule.path}`;
}
