// The routes under /api/v1 that are not in the permission table, because they take no API key:
// the API's index (what a person opening the base URL sees), this document itself, and the HTTP
// intake of inbound mail (api/routes/inbound-intake.ts).
import type { Schema } from './convert.js';
import { errorResponses } from './errors.js';

export const OPENAPI_PATH = '/openapi.json';

/** GET /api/v1: where the reference is. */
export function apiIndex(prefix: string) {
  return {
    object: 'api',
    version: 'v1',
    openapi: prefix + OPENAPI_PATH,
    reference: '/docs/api',
    authentication: 'Authorization: Bearer <API key>',
  };
}

/** The operations of those routes; their error answers go to `responses` (components). */
export function extraPaths(responses: Record<string, Schema>): Record<string, Record<string, Schema>> {
  return {
    '/': {
      get: {
        operationId: 'getApiIndex',
        summary: 'The API index',
        description: 'No authentication. Where this document and the reference page are.',
        tags: ['Meta'],
        security: [],
        responses: {
          '200': {
            description: 'The API index.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['object', 'version', 'openapi', 'reference', 'authentication'],
                  properties: {
                    object: { const: 'api' },
                    version: { type: 'string' },
                    openapi: { type: 'string' },
                    reference: { type: 'string' },
                    authentication: { type: 'string' },
                  },
                },
              },
            },
          },
        },
      },
    },
    [OPENAPI_PATH]: {
      get: {
        operationId: 'getOpenapiJson',
        summary: 'This OpenAPI document',
        description: 'No authentication. Built when the web process starts, from the routes and their schemas.',
        tags: ['Meta'],
        security: [],
        responses: {
          '200': {
            description: 'The OpenAPI 3.1 document.',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
        },
      },
    },
    '/inbound/raw': {
      post: {
        operationId: 'postInboundRaw',
        summary: 'Hand over a received message (HTTP intake)',
        description:
          'For installs whose MX is elsewhere: the raw message, routed as the MX routes `RCPT TO`. Takes the install’s `INBOUND_SECRET`, not an API key; without it set, 401.',
        tags: ['Inbound'],
        security: [{ inboundSecret: [] }],
        parameters: [
          {
            name: 'X-Tern-Rcpt-To',
            in: 'header',
            required: false,
            schema: { type: 'string' },
            description: 'Envelope recipients, comma-separated; default: the message’s To and Cc.',
          },
        ],
        requestBody: {
          required: true,
          content: { 'message/rfc822': { schema: { type: 'string', contentMediaType: 'message/rfc822' } } },
        },
        responses: {
          '202': {
            description: 'Stored; the ids of the inbound messages made (one per routed domain).',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundAccepted' } } },
          },
          ...errorResponses(
            [
              'unauthorized',
              'payload_too_large',
              'unsupported_media_type',
              'validation_error',
              'internal_error',
              'unavailable',
            ],
            responses,
          ),
        },
      },
    },
  };
}
