// Request schemas of the email routes (DESIGN §5). ajv checks shapes and lengths; the rules that
// need parsing (addresses, base64, dates, from-domain) are checked in api/mail/emails-input.ts.
import { STREAMS, type Stream } from '../../shared/streams.js';
import { paginationProperties } from '../validate.js';

export const MAX_RECIPIENTS_PER_FIELD = 50;
export const MAX_BATCH = 100;

/** POST /emails: the attachments of one message, decoded, in all. */
export const MAX_ATTACHMENT_BYTES = 40 * 1024 * 1024;

/**
 * What one item of POST /emails/batch may carry beyond the fields it shares with POST /emails.
 * Chosen so that 100 items, each at every maximum, fit the route's body limit
 * (BATCH_BODY_LIMIT, shared/permissions.ts; test/unit/email-limits.test.ts checks the sum).
 */
export const BATCH_ITEM = {
  /** Characters of `html`, and of `text`. */
  contentChars: 128 * 1024,
  attachments: 10,
  /** The item's attachments, decoded, in all. */
  attachmentBytes: 512 * 1024,
  /** Template variables: as many as a template declares, named as it names them. */
  variables: 50,
  variableNameChars: 50,
  variableValueChars: 2000,
} as const;

/** Characters of unwrapped base64 for `bytes` bytes. */
export function base64Chars(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

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
  stream?: Stream;
}

const address = { type: 'string', minLength: 1, maxLength: 512 } as const;
// A string or an array of strings (Resend takes both): checked in emails-input.ts, where the
// message can say which of the two rules failed.
const addressList = {} as const;
// Resend's rule for tag names and values.
const tagText = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' } as const;

function templateRef(limits?: { variables: number; variableNameChars: number; variableValueChars: number }) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: {
      id: { type: 'string', minLength: 1, maxLength: 200 },
      version: { type: 'integer', minimum: 1 },
      variables: {
        type: 'object',
        maxProperties: limits?.variables ?? 200,
        ...(limits ? { propertyNames: { maxLength: limits.variableNameChars } } : {}),
        additionalProperties: {
          anyOf: [
            limits ? { type: 'string', maxLength: limits.variableValueChars } : { type: 'string' },
            { type: 'number' },
            { type: 'boolean' },
            { type: 'null' },
          ],
        },
      },
    },
  } as const;
}

function attachmentList(maxItems: number, maxContentChars?: number) {
  return {
    type: 'array',
    maxItems,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['filename', 'content'],
      properties: {
        filename: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\r\\n\\x00/\\\\]+$' },
        content: { type: 'string', minLength: 1, ...(maxContentChars ? { maxLength: maxContentChars } : {}) },
        content_type: { type: 'string', minLength: 3, maxLength: 255, pattern: '^[\\w.+-]+/[\\w.+-]+$' },
        content_id: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\s<>]+$' },
      },
    },
  } as const;
}

const commonProperties = {
  from: address,
  to: addressList,
  cc: addressList,
  bcc: addressList,
  reply_to: addressList,
  subject: { type: 'string', maxLength: 998 },
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
  kind: { type: 'string', minLength: 1, maxLength: 64, format: 'label' },
  topic_id: { type: 'string', minLength: 1, maxLength: 64 },
  scheduled_at: { type: 'string', minLength: 1, maxLength: 64 },
  stream: { type: 'string', enum: STREAMS },
} as const;

export const sendEmailSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['to'],
  properties: {
    ...commonProperties,
    html: { type: 'string', maxLength: 5 * 1024 * 1024 },
    text: { type: 'string', maxLength: 5 * 1024 * 1024 },
    template: templateRef(),
    attachments: attachmentList(100),
  },
} as const;

// Resend's batch takes neither attachments nor scheduled_at; Tern's takes both, with content
// and attachments bounded per item (BATCH_ITEM) so that a full batch stays one bounded request.
export const batchItemSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['to'],
  properties: {
    ...commonProperties,
    html: { type: 'string', maxLength: BATCH_ITEM.contentChars },
    text: { type: 'string', maxLength: BATCH_ITEM.contentChars },
    template: templateRef(BATCH_ITEM),
    attachments: attachmentList(BATCH_ITEM.attachments, base64Chars(BATCH_ITEM.attachmentBytes)),
  },
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
  stream?: Stream;
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
    kind: { type: 'string', minLength: 1, maxLength: 64, format: 'label' },
    stream: { type: 'string', enum: STREAMS },
    tag: { type: 'string', minLength: 1, maxLength: 513, pattern: '^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)?$' },
    to: { type: 'string', minLength: 3, maxLength: 254 },
    created_after: { type: 'string', format: 'date-time' },
    created_before: { type: 'string', format: 'date-time' },
  },
} as const;

export const rawQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    recipient: { type: 'string', minLength: 3, maxLength: 320, description: 'an address of the message (any field)' },
  },
} as const;

export interface RawEmailQuery {
  recipient?: string;
}

export const listEventsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 100 },
    after: paginationProperties.after,
  },
} as const;
