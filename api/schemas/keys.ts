// Request schemas of the key routes (DESIGN §3).
import { paginationProperties } from '../validate.js';

/** Resend's permission names (`POST /api-keys`), each the Tern tier it is. */
export const RESEND_PERMISSIONS = { full_access: 'FULL', sending_access: 'SEND' } as const;

export interface CreateKeyBody {
  name: string;
  permission: 'SEND' | 'FULL' | 'ADMIN' | keyof typeof RESEND_PERMISSIONS;
  mode: 'live' | 'test';
  domains?: string[];
  /** Resend's one-domain restriction: the same as `domains: [domain_id]`. */
  domain_id?: string;
}

export const createKeySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
    // ADMIN is accepted by the schema so that the route can answer 403 forbidden, as the spec says.
    // Resend's names are accepted too, and its default (full access) applies when none is given.
    permission: {
      type: 'string',
      enum: ['SEND', 'FULL', 'ADMIN', ...Object.keys(RESEND_PERMISSIONS)],
      default: 'full_access',
    },
    mode: { type: 'string', enum: ['live', 'test'], default: 'live' },
    domains: {
      type: 'array',
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 253 },
    },
    domain_id: { type: 'string', minLength: 1, maxLength: 253 },
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
