// Request schemas of the key routes (DESIGN §3).
import { paginationProperties } from '../validate.js';

export interface CreateKeyBody {
  name: string;
  permission: 'SEND' | 'FULL' | 'ADMIN';
  mode: 'live' | 'test';
  domains?: string[];
}

export const createKeySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'permission'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
    // ADMIN is accepted by the schema so that the route can answer 403 forbidden, as the spec says.
    permission: { type: 'string', enum: ['SEND', 'FULL', 'ADMIN'] },
    mode: { type: 'string', enum: ['live', 'test'], default: 'live' },
    domains: {
      type: 'array',
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 253 },
    },
  },
} as const;

export interface RotateKeyBody {
  expires_in: number;
}

export const rotateKeySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    expires_in: { type: 'integer', minimum: 0, maximum: 604800, default: 86400 },
  },
} as const;

export const listKeysQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
