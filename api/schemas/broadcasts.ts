// Request schemas of the broadcast routes (DESIGN §5 Broadcasts; Resend's field names, with
// `audience_id` accepted as the older name of `segment_id`). Addresses, dates and the
// content rule are checked in api/routes/broadcasts-input.ts.
import { paginationProperties, type Pagination } from '../validate.js';

export type TemplateInput = string | { id: string; version?: number };

export interface BroadcastFieldsBody {
  name?: string | null;
  from?: string;
  subject?: string | null;
  html?: string | null;
  text?: string | null;
  template?: TemplateInput | null;
  segment_id?: string;
  audience_id?: string;
  topic_id?: string | null;
  reply_to?: string | string[] | null;
  preview_text?: string | null;
  kind?: string | null;
  scheduled_at?: string | null;
}

export interface CreateBroadcastBody extends BroadcastFieldsBody {
  /** Resend: send at once (or at scheduled_at) instead of keeping a draft. */
  send?: boolean;
}

export type PatchBroadcastBody = BroadcastFieldsBody & { id?: string };

const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
const idString = { type: 'string', minLength: 1, maxLength: 64 } as const;

const fields = {
  name: nullable({ type: 'string', maxLength: 256, format: 'label' }),
  from: { type: 'string', minLength: 1, maxLength: 512 },
  subject: nullable({ type: 'string', maxLength: 998 }),
  html: nullable({ type: 'string', maxLength: 5 * 1024 * 1024 }),
  text: nullable({ type: 'string', maxLength: 5 * 1024 * 1024 }),
  template: nullable({
    anyOf: [
      { type: 'string', minLength: 1, maxLength: 200 },
      {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: { id: { type: 'string', minLength: 1, maxLength: 200 }, version: { type: 'integer', minimum: 1 } },
      },
    ],
  }),
  segment_id: idString,
  audience_id: idString,
  topic_id: nullable(idString),
  // A string or an array of strings: checked in broadcasts-input.ts.
  reply_to: {},
  preview_text: nullable({ type: 'string', maxLength: 500 }),
  kind: nullable({ type: 'string', minLength: 1, maxLength: 64, format: 'label' }),
  scheduled_at: nullable({ type: 'string', minLength: 1, maxLength: 64 }),
} as const;

export const createBroadcastSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['from'],
  properties: { ...fields, send: { type: 'boolean' } },
} as const;

// The Resend SDK's update sends its whole payload; an `id` equal to the path's is tolerated.
export const patchBroadcastSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...fields, id: idString },
} as const;

export interface SendBroadcastBody {
  scheduled_at?: string | null;
}

export const sendBroadcastSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { scheduled_at: fields.scheduled_at },
} as const;

export type BroadcastListQuery = Pagination & { status?: 'draft' | 'scheduled' | 'sending' | 'sent' | 'canceled' };

export const broadcastListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    status: { type: 'string', enum: ['draft', 'scheduled', 'sending', 'sent', 'canceled'] },
  },
} as const;
