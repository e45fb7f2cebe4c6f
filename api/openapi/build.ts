// The OpenAPI 3.1 document of the HTTP API, built at start-up from the permission table
// (shared/permissions.ts: every route, its tier and rules, the names of its request schemas),
// the ajv schemas the routes validate with (api/schemas/registry.ts), the response schemas
// (api/schemas/responses/) and the operation docs beside this file. A route without an
// operation doc, or a doc without a route, stops the build.
import { ROUTES, routeId, type RouteRule } from '../../shared/permissions.js';
import { BODY_ITEM_SCHEMAS, BODY_SCHEMAS, QUERY_SCHEMAS } from '../schemas/registry.js';
import { RESPONSE_SCHEMAS } from '../schemas/responses/index.js';
import { toOpenApiSchema, type Schema } from './convert.js';
import { errorResponses, routeErrorCodes } from './errors.js';
import { extraPaths } from './extra.js';
import { audienceOperations } from './operations-audience.js';
import { bulkOperations } from './operations-bulk.js';
import { coreOperations } from './operations-core.js';
import { permissionWords, TAGS, tagOf } from './words.js';
import type { OperationDoc } from './types.js';

export const OPERATIONS: Record<string, OperationDoc> = { ...coreOperations, ...audienceOperations, ...bulkOperations };

const PATH_PARAMS: Record<string, string> = {
  keys: 'Key id (`key_…`).',
  domains: 'Domain id (`dom_…`) or name.',
  emails: 'Email id (`em_…`).',
  templates: 'Template id (`tpl_…`) or slug.',
  suppressions: 'Suppression id (`sup_…`) or the suppressed address.',
  webhooks: 'Webhook id (`wh_…`).',
  inbound: 'Inbound message id (`inb_…`).',
  contacts: 'Contact id (`ct_…`) or email address.',
  audiences: 'Contact id (`ct_…`) or email address.',
  topics: 'Topic id (`top_…`).',
  segments: 'Segment id (`seg_…`).',
  broadcasts: 'Broadcast id (`bc_…`).',
  automations: 'Automation id (`aut_…`).',
};

/** `GET /webhooks/:id/deliveries` → `getWebhooksByIdDeliveries`. */
function operationId(rule: RouteRule): string {
  const words = rule.path
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith(':') ? `by_${seg.slice(1)}` : seg))
    .flatMap((w) => w.split(/[_-]/));
  return rule.method.toLowerCase() + words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
}

function pathParameters(rule: RouteRule): Schema[] {
  const resource = rule.path.split('/')[1]!;
  return [...rule.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
    description:
      name === 'audience_id'
        ? 'Any value: Resend’s audience id, ignored (contacts belong to the organization).'
        : name === 'delivery_id'
          ? 'Webhook delivery id (`dlv_…`).'
          : PATH_PARAMS[resource],
  }));
}

function queryParameters(rule: RouteRule, components: Record<string, Schema>): Schema[] {
  if (!rule.query) return [];
  const schema = toOpenApiSchema(QUERY_SCHEMAS[rule.query]!, components);
  const required = (schema.required as string[] | undefined) ?? [];
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  return Object.entries(props).map(([name, s]) => ({
    name,
    in: 'query',
    required: required.includes(name),
    schema: s,
  }));
}

function headerParameters(rule: RouteRule): Schema[] {
  const out: Schema[] = [];
  if (rule.idempotent) out.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (rule.body === 'SendEmailBatch') out.push({ $ref: '#/components/parameters/BatchValidation' });
  return out;
}

/** An upload's body: the CSV itself, or a form with the part `file` (and a `mapping` field). */
function uploadBody(doc: OperationDoc): Schema {
  const csv = { type: 'string', contentMediaType: 'text/csv' };
  const fields: Record<string, Schema> = { file: csv };
  if (doc.upload) {
    fields.mapping = { $ref: `#/components/schemas/${doc.upload}` };
    fields.trigger_automations = { type: 'boolean' };
  }
  return {
    required: true,
    content: {
      'text/csv': { schema: csv },
      'multipart/form-data': {
        schema: { type: 'object', required: ['file'], properties: fields },
        ...(doc.upload ? { encoding: { mapping: { contentType: 'application/json' } } } : {}),
      },
    },
  };
}

function requestBody(rule: RouteRule, doc: OperationDoc): Schema | undefined {
  if (rule.upload) {
    if (doc.upload === undefined) throw new Error(`${routeId(rule)}: an upload route's doc must say \`upload\``);
    return uploadBody(doc);
  }
  if (!rule.body) return undefined;
  const schema = BODY_SCHEMAS[rule.body] as { required?: string[]; type?: string };
  return {
    // A body whose fields are all optional may be left out (it is then read as `{}`).
    required: schema.type === 'array' || (schema.required?.length ?? 0) > 0,
    content: {
      'application/json': {
        schema: { $ref: `#/components/schemas/${rule.body}` },
        ...(doc.example !== undefined ? { example: doc.example } : {}),
      },
    },
  };
}

function successResponses(rule: RouteRule, doc: OperationDoc): Record<string, Schema> {
  const statuses = doc.status ?? [200];
  const out: Record<string, Schema> = {};
  for (const [i, status] of statuses.entries()) {
    const content: Schema = doc.response
      ? { 'application/json': { schema: { $ref: `#/components/schemas/${doc.response}` } } }
      : {};
    if (routeId(rule) === 'GET /metrics') content['text/csv'] = { schema: { type: 'string' } };
    if (doc.media) content[doc.media] = { schema: { type: 'string' } };
    out[String(status)] = {
      description:
        doc.statusWords?.[status] ??
        (statuses.length > 1 ? (i === 0 ? 'Created.' : 'It existed; updated.') : status === 202 ? 'Accepted.' : 'OK.'),
      headers: { 'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' } },
      content,
    };
  }
  return out;
}

function operation(rule: RouteRule, components: Record<string, Schema>, responses: Record<string, Schema>): Schema {
  const id = rule.aliasOf ?? routeId(rule);
  const doc = OPERATIONS[id];
  if (!doc) throw new Error(`no operation doc for ${id} (api/openapi/operations-*.ts)`);
  const alias = rule.aliasOf ? `Resend's path for \`${rule.aliasOf}\`, which it is in every other way.` : undefined;
  if (doc.response && !components[doc.response]) throw new Error(`${id}: no response schema ${doc.response}`);
  const parameters = [...pathParameters(rule), ...queryParameters(rule, components), ...headerParameters(rule)];
  const body = requestBody(rule, doc);
  return {
    operationId: operationId(rule),
    summary: doc.summary,
    description: [alias, doc.description, permissionWords(rule, doc.restrictedWords)].filter(Boolean).join('\n\n'),
    tags: [tagOf(rule.path)],
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses: { ...successResponses(rule, doc), ...errorResponses(routeErrorCodes(rule, doc.errors), responses) },
    'x-tern-permission': rule.tier,
    'x-tern-live-only': rule.liveOnly,
    'x-tern-restricted': rule.restricted,
    'x-tern-sending': rule.sending,
    'x-tern-idempotent': rule.idempotent,
  };
}

function componentSchemas(): Record<string, Schema> {
  const components: Record<string, Schema> = { ...RESPONSE_SCHEMAS };
  for (const [name, schema] of Object.entries(BODY_SCHEMAS)) {
    if (components[name]) throw new Error(`schema name ${name} is both a request and a response`);
    components[name] = toOpenApiSchema(schema, components);
  }
  // Items validated one at a time by their handler: the document shows them as the array's items.
  for (const [name, item] of Object.entries(BODY_ITEM_SCHEMAS)) {
    components[name] = { ...components[name], items: { $ref: `#/components/schemas/${item}` } };
  }
  return components;
}

export interface OpenApiOptions {
  version: string;
}

export function buildOpenApi(opts: OpenApiOptions): Schema {
  const unused = Object.keys(OPERATIONS).filter((id) => !ROUTES.some((r) => routeId(r) === id));
  if (unused.length) throw new Error(`operation docs without a route: ${unused.join(', ')}`);
  const schemas = componentSchemas();
  const responses: Record<string, Schema> = {};
  const paths: Record<string, Record<string, Schema>> = {};
  for (const rule of ROUTES) {
    const path = rule.path.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[rule.method.toLowerCase()] = operation(rule, schemas, responses);
  }
  for (const [path, ops] of Object.entries(extraPaths(responses))) paths[path] = { ...paths[path], ...ops };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tern API',
      version: opts.version,
      description:
        'The HTTP API of Tern, a self-hostable email sending platform. Every request carries `Authorization: Bearer <API key>`; every failure answers `{"error":{"code","message"}}`. Keys have a tier (SEND < FULL < ADMIN), a mode (live or test) and may be restricted to some domains: each operation says what it needs in its description and in `x-tern-permission`, `x-tern-live-only`, `x-tern-restricted` and `x-tern-sending`.',
    },
    servers: [{ url: '/api/v1', description: 'This install' }],
    security: [{ apiKey: [] }],
    tags: TAGS,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas,
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key: `tern_live_…` or `tern_test_…` (the prefix follows BRAND).',
        },
        inboundSecret: { type: 'http', scheme: 'bearer', description: 'The install’s INBOUND_SECRET.' },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 256 },
          description:
            'Retries with the same key and the same request get the first answer again (24 h); a different request with it gets 409 `idempotency_conflict`.',
        },
        BatchValidation: {
          name: 'x-batch-validation',
          in: 'header',
          required: false,
          schema: { type: 'string', enum: ['strict', 'permissive'], default: 'strict' },
        },
      },
      headers: {
        'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait before retrying.' },
        'RateLimit-Remaining': {
          schema: { type: 'integer', minimum: 0 },
          description: 'Requests left in the key’s bucket (also `RateLimit-Limit`, `RateLimit-Reset`).',
        },
      },
    },
  };
}
