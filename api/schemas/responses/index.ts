// Every response schema, by component name (the OpenAPI document's `components.schemas`).
import { audienceResponses } from './audience.js';
import { listOf, type Schema } from './build.js';
import { bulkResponses } from './bulk.js';
import { contentResponses } from './content.js';
import { emailResponses } from './emails.js';
import { resourceResponses } from './resources.js';

const LISTED = [
  'Email',
  'EmailEvent',
  'Domain',
  'ApiKey',
  'Webhook',
  'WebhookDelivery',
  'Suppression',
  'Contact',
  'TemplateSummary',
  'Broadcast',
  'Topic',
  'Segment',
  'Automation',
  'AutomationRun',
  'Inbound',
  'InboundAttachment',
  'RequestLog',
  'ContactImport',
  'ContactExport',
  'AuditEntry',
];

export const RESPONSE_SCHEMAS: Record<string, Schema> = {
  ...emailResponses,
  ...resourceResponses,
  ...contentResponses,
  ...audienceResponses,
  ...bulkResponses,
  ...Object.fromEntries(LISTED.map((name) => [`${name}List`, listOf(name)])),
  Error: {
    type: 'object',
    description: 'Every failure: `{"error":{"code","message"}}`; the status follows the code.',
    additionalProperties: false,
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        additionalProperties: false,
        required: ['code', 'message'],
        properties: { code: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};
