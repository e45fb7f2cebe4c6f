// Request schemas of the email routes (DESIGN §5). ajv checks shapes and lengths; the rules that
// need parsing (addresses, base64, dates, from-domain) are checked in api/routes/emails-input.ts.
import { paginationProperties } from '../validate.js';

export const MAX_RECIPIENTS_PER_FIELD = 50;
export const MAX_BATCH = 100;

export interface TagInput {
  name: string;
  value: string;
}

export interface AttachmentInput {
  filename: string;
  content: string;
  content_type?: string;
  content_id?: string;
}

export interface TemplateRef {
  id: string;
  version?: number;
  variables?: Record<string, string | number | boolean | null>;
}

export interface SendEmailBody {
  from?: string;
  to: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  reply_to?: string | string[];
  subject?: string;
  html?: string;
  text?: string;
  headers?: Record<string, string>;
  attachments?: AttachmentInput[];
  tags?: TagInput[];
  scheduled_at?: string;
  template?: TemplateRef;
  kind?: string;
  topic_id?: string;
}

const address = { type: 'string', minLength: 1, maxLength: 512 } as const;
// A string or an array of strings (Resend takes both): checked in emails-input.ts, where the
// message can say which of the two rules failed.
const addressList = {} as const;
// Resend's rule for tag names and values.
const tagText = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' } as const;

const commonProperties = {
  from: address,
  to: addressList,
  cc: addressList,
  bcc: addressList,
  reply_to: addressList,
  subject: { type: 'string', maxLength: 998 },
  html: { type: 'string', maxLength: 5 * 1024 * 1024 },
  text: { type: 'string', maxLength: 5 * 1024 * 1024 },
  headers: {
    type: 'object',
    maxProperties: 50,
    propertyNames: { pattern: '^[!-9;-~]{1,100}$' },
    additionalProperties: { type: 'string', maxLength: 2000 },
  },
  tags: {
    type: 'array',
    maxItems: 50,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'value'],
      properties: { name: tagText, value: tagText },
    },
  },
  template: {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: {
      id: { type: 'string', minLength: 1, maxLength: 200 },
      version: { type: 'integer', minimum: 1 },
      variables: {
        type: 'object',
        maxProperties: 200,
        additionalProperties: {
          anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
        },
      },
    },
  },
  kind: { type: 'string', minLength: 1, maxLength: 64 },
  topic_id: { type: 'string', minLength: 1, maxLength: 64 },
} as const;

export const sendEmailSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['to'],
  properties: {
    ...commonProperties,
    attachments: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['filename', 'content'],
        properties: {
          filename: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\r\\n\\x00/\\\\]+$' },
          content: { type: 'string', minLength: 1 },
          content_type: { type: 'string', minLength: 3, maxLength: 255, pattern: '^[\\w.+-]+/[\\w.+-]+$' },
          content_id: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\s<>]+$' },
        },
      },
    },
    scheduled_at: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

// Resend's batch takes neither attachments nor scheduled_at; neither does Tern's.
export const batchItemSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['to'],
  properties: commonProperties,
} as const;

export const batchBodySchema = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_BATCH,
} as const;

export interface UpdateEmailBody {
  scheduled_at: string;
}

export const updateEmailSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['scheduled_at'],
  properties: { scheduled_at: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export const EMAIL_STATUSES = ['scheduled', 'queued', 'processing', 'sent', 'canceled', 'failed'] as const;

export interface ListEmailsQuery {
  limit: number;
  after?: string;
  before?: string;
  status?: (typeof EMAIL_STATUSES)[number];
  kind?: string;
  tag?: string;
  to?: string;
  created_after?: string;
  created_before?: string;
}

export const listEmailsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    status: { type: 'string', enum: EMAIL_STATUSES },
    kind: { type: 'string', minLength: 1, maxLength: 64 },
    tag: { type: 'string', minLength: 1, maxLength: 513, pattern: '^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)?$' },
    to: { type: 'string', minLength: 3, maxLength: 254 },
    created_after: { type: 'string', format: 'date-time' },
    created_before: { type: 'string', format: 'date-time' },
  },
} as const;

export const listEventsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 100 },
    after: paginationProperties.after,
  },
} as const;
