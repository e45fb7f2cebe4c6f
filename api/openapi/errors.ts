// The error answers of an operation: the codes its rule implies (authorization, body, path
// parameters, idempotency) and those its handler adds, grouped by status, each with an example.
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors.js';
import type { RouteRule } from '../../shared/permissions.js';
import type { Schema } from './convert.js';

/** What each code means, and an example message, as the API words them. */
const CODES: Record<ErrorCode, [meaning: string, example: string]> = {
  bad_request: ['The request is not valid HTTP/1.1.', 'The request could not be parsed as HTTP (HPE_INVALID_METHOD)'],
  invalid_json: ['The body is not valid JSON.', 'Request body is not valid JSON: Unexpected end of JSON input'],
  unauthorized: [
    'Authorization header missing or malformed; token unknown, revoked or expired.',
    'Missing Authorization header; use "Authorization: Bearer <API key>"',
  ],
  forbidden: [
    'The key is below the route’s tier (the message names the tier), a test key on a live-only route, or an action the key may not take.',
    'POST /domains requires an ADMIN key; this key is SEND',
  ],
  forbidden_domain: [
    'A domain-restricted key on a route closed to it, or with a domain outside its restriction.',
    'Domain-restricted keys cannot call POST /webhooks',
  ],
  sending_paused: [
    'Sending is paused for the organization.',
    'Sending is paused for this organization: complaint rate',
  ],
  not_found: ['No such resource in the key’s organization (or outside a restricted key’s domains).', 'Email not found'],
  method_not_allowed: ['The path exists with other methods (see `Allow`).', 'DELETE is not allowed on /api/v1/keys/me'],
  request_timeout: [
    'The request line, headers or body did not arrive in time.',
    'The request did not arrive completely in time',
  ],
  idempotency_conflict: [
    'The `Idempotency-Key` was used before with a different request.',
    'Idempotency-Key was used with a different request',
  ],
  idempotency_in_progress: [
    'The first request with this `Idempotency-Key` is still running.',
    'A request with this Idempotency-Key is in progress',
  ],
  invalid_state: [
    'The resource is not in a state that allows this action.',
    'Email em_01J… is sent; it can no longer be canceled',
  ],
  conflict: ['The resource already exists (a duplicate name).', 'Domain acme.com already exists'],
  payload_too_large: ['The body is over the route’s limit.', 'Request body is larger than 1048576 bytes'],
  uri_too_long: [
    'The request line is over the server’s limit (16 KiB).',
    'The request line is longer than 16384 bytes',
  ],
  unsupported_media_type: [
    'The body’s `Content-Type` is missing or is not JSON (`application/json`, any case, or a `+json` type).',
    'Request body must be sent with Content-Type: application/json (got none)',
  ],
  unknown_domain: [
    'A domain the key may not use, or that the organization does not have.',
    'Domain "example.org" is not one this key may read',
  ],
  demo_domain: [
    'A live send from the demo domain of `npm start` (test keys only; add a domain you own).',
    'demo.test is the demo domain: it never leaves this machine, so only test keys send from it. To send real mail, add a domain you own (POST /api/v1/domains, or the console) and send from it.',
  ],
  validation_error: ['The body or the query failed validation; the message names the field.', 'body.to is required'],
  rate_limited: [
    'The key’s request rate is over its limit; wait `Retry-After` seconds.',
    'Too many requests for this API key; retry in 1 s',
  ],
  headers_too_large: [
    'The request line and headers together are over the server’s limit (16 KiB).',
    'The request headers are larger than 16384 bytes',
  ],
  internal_error: ['An unexpected fault; the detail is in the log (`HTTP_INTERNAL_ERROR`).', 'Internal server error'],
  unavailable: [
    'Postgres or Redis is unreachable; retry after `Retry-After` (1 s). On a sending route nothing was stored.',
    'A backing service is unavailable; retry shortly',
  ],
  outcome_unknown: [
    'The connection to Postgres broke while the message was being stored, and Postgres stayed unreachable: it may or may not be stored. The message names its ids: `GET` one (404 = not stored), or retry with the same `Idempotency-Key`, which sends it once.',
    'Email em_01J… may or may not have been stored (Postgres became unreachable while storing it): GET /emails/em_01J… tells (404: it was not), or retry with the same Idempotency-Key',
  ],
};

/** The codes a route can answer: implied by its rule, then its handler's own. */
export function routeErrorCodes(rule: RouteRule, extra: ErrorCode[] = []): ErrorCode[] {
  const codes = new Set<ErrorCode>(['unauthorized', 'rate_limited']);
  if (rule.tier !== 'ANY' || rule.liveOnly) codes.add('forbidden');
  if (rule.restricted === 'deny') codes.add('forbidden_domain');
  if (rule.sending) codes.add('sending_paused');
  if (rule.method !== 'GET')
    ['invalid_json', 'payload_too_large', 'unsupported_media_type'].forEach((c) => codes.add(c as ErrorCode));
  // A path parameter is checked too (a NUL character in it is refused before any look-up).
  if (rule.body || rule.query || rule.path.includes(':')) codes.add('validation_error');
  if (rule.path.includes(':')) codes.add('not_found');
  if (rule.idempotent) ['idempotency_conflict', 'idempotency_in_progress'].forEach((c) => codes.add(c as ErrorCode));
  for (const c of extra) codes.add(c);
  codes.add('internal_error');
  codes.add('unavailable');
  return [...codes];
}

/**
 * OpenAPI `responses` entries for `codes`, one per status, each code an example. Each distinct
 * answer is stored once in `shared` (the document's `components.responses`) and referred to.
 */
export function errorResponses(codes: ErrorCode[], shared: Record<string, Schema>): Record<string, Schema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  const out: Record<string, Schema> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const name = `Error-${status}-${list.join('-')}`;
    out[String(status)] = { $ref: `#/components/responses/${name}` };
    shared[name] ??= {
      description: list.map((c) => `\`${c}\`: ${CODES[c][0]}`).join(' '),
      ...(status === 429 || status === 503
        ? { headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } }
        : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { properties: { error: { properties: { code: { enum: list } } } } },
            ],
          },
          examples: Object.fromEntries(
            list.map((c) => [c, { summary: c, value: { error: { code: c, message: CODES[c][1] } } }]),
          ),
        },
      },
    };
  }
  return out;
}
