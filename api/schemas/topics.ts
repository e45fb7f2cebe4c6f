// Request schemas of the topic routes (DESIGN §5 Topics; Resend's field names).
import type { Subscription } from '../../shared/db/topics.js';
import { paginationProperties, type Pagination } from '../validate.js';

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
  description: { type: ['string', 'null'], maxLength: 1000 },
  default_subscription: { type: 'string', enum: ['opt_in', 'opt_out'] },
} as const;

export interface CreateTopicBody {
  name: string;
  description?: string | null;
  default_subscription: Subscription;
}

export const createTopicSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'default_subscription'],
  properties: fields,
} as const;

export type PatchTopicBody = Partial<CreateTopicBody> & { id?: string };

// The Resend SDK's topics.update sends its whole payload, the id included.
export const patchTopicSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...fields, id: { type: 'string', maxLength: 64 } },
} as const;

export type ListTopicsQuery = Pagination;

export const listTopicsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
