// Request schemas of the webhook routes (DESIGN §5 Webhooks).
import { WEBHOOK_EVENT_TYPES } from '../../shared/events.js';
import { WEBHOOK_URL_MAX_LENGTH } from '../../shared/webhooks/rules.js';
import { paginationProperties } from '../validate.js';

const eventsProperty = {
  type: 'array',
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  uniqueItems: true,
  items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] },
} as const;

const urlProperty = { type: 'string', minLength: 1, maxLength: WEBHOOK_URL_MAX_LENGTH } as const;
const descriptionProperty = { type: ['string', 'null'], maxLength: 500 } as const;

export interface CreateWebhookBody {
  url?: string;
  /** Resend's name for `url`. */
  endpoint?: string;
  events?: string[];
  description?: string | null;
}

export const createWebhookSchema = {
  type: 'object',
  additionalProperties: false,
  // `url` or Resend's `endpoint`: the handler requires one of them.
  properties: {
    url: urlProperty,
    endpoint: urlProperty,
    events: eventsProperty,
    description: descriptionProperty,
  },
} as const;

export interface UpdateWebhookBody {
  url?: string;
  endpoint?: string;
  events?: string[];
  description?: string | null;
  status?: 'enabled' | 'disabled';
}

export const updateWebhookSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    url: urlProperty,
    endpoint: urlProperty,
    events: eventsProperty,
    description: descriptionProperty,
    status: { type: 'string', enum: ['enabled', 'disabled'] },
  },
} as const;

export interface RotateSecretBody {
  expires_in: number;
}

export const rotateSecretSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { expires_in: { type: 'integer', minimum: 0, maximum: 604800, default: 86400 } },
} as const;

export interface TestWebhookBody {
  type: string;
}

export const testWebhookSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { type: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES], default: 'email.sent' } },
} as const;

export const listWebhooksQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;

export interface ListDeliveriesQuery {
  limit: number;
  after?: string;
  before?: string;
  status?: 'pending' | 'succeeded' | 'failed';
}

export const listDeliveriesQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...paginationProperties, status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] } },
} as const;
