// Request schemas of the contact routes (DESIGN §5 Contacts). Field names follow Resend's
// contacts API; `audience_id` is accepted and ignored (Resend scoped contacts by audience).
import type { PropertyValue } from '../../shared/db/contacts.js';
import type { Subscription } from '../../shared/db/topics.js';
import { PROPERTY_NAME } from '../../shared/segment-filter.js';
import { paginationProperties, type Pagination } from '../validate.js';

const name = { type: ['string', 'null'], maxLength: 256, format: 'label' } as const;

/** Free-form contact properties: flat scalars, bounded in number and size. */
export const properties = {
  type: 'object',
  maxProperties: 50,
  propertyNames: { pattern: PROPERTY_NAME },
  additionalProperties: {
    anyOf: [{ type: 'string', maxLength: 2000 }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
  },
} as const;

/** A contact's topic choices; also Resend's PATCH /contacts/{id}/topics body (the bare array). */
export const topicChoicesSchema = {
  type: 'array',
  maxItems: 100,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'subscription'],
    properties: {
      id: { type: 'string', minLength: 1, maxLength: 64 },
      subscription: { type: 'string', enum: ['opt_in', 'opt_out'] },
    },
  },
} as const;

export interface TopicChoice {
  id: string;
  subscription: Subscription;
}

export interface ContactPatchBody {
  first_name?: string | null;
  last_name?: string | null;
  properties?: Record<string, PropertyValue>;
  unsubscribed?: boolean;
  audience_id?: string;
}

export interface UpsertContactBody extends ContactPatchBody {
  email: string;
  topics?: TopicChoice[];
}

const patchProperties = {
  first_name: name,
  last_name: name,
  properties,
  unsubscribed: { type: 'boolean' },
  audience_id: { type: 'string', maxLength: 128 },
} as const;

export const upsertContactSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', maxLength: 320, format: 'email' },
    ...patchProperties,
    topics: topicChoicesSchema,
  },
} as const;

export const patchContactSchema = {
  type: 'object',
  additionalProperties: false,
  properties: patchProperties,
} as const;

export interface ListContactsQuery extends Pagination {
  email?: string;
  unsubscribed?: boolean;
}

export const listContactsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    email: { type: 'string', minLength: 1, maxLength: 320 },
    unsubscribed: { type: 'boolean' },
  },
} as const;

export interface SubscriptionsBody {
  topics?: TopicChoice[];
  unsubscribed?: boolean;
}

export const subscriptionsSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { topics: topicChoicesSchema, unsubscribed: { type: 'boolean' } },
} as const;
