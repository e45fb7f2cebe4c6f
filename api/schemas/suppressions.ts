// Request schemas of the suppression routes (DESIGN §5 Suppressions).
import type { SuppressionReason } from '../../shared/db/suppressions.js';
import { paginationProperties, type Pagination } from '../validate.js';

const domainRef = { type: 'string', minLength: 1, maxLength: 253 } as const;

export interface CreateSuppressionBody {
  email: string;
  /** Domain name or id; absent = organization-wide. */
  domain?: string;
}

export const createSuppressionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', maxLength: 320, format: 'email' },
    domain: domainRef,
  },
} as const;

export interface ListSuppressionsQuery extends Pagination {
  email?: string;
  reason?: SuppressionReason;
  domain?: string;
}

export const listSuppressionsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    email: { type: 'string', minLength: 1, maxLength: 320 },
    reason: { type: 'string', enum: ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] },
    domain: domainRef,
  },
} as const;

/** GET / DELETE /suppressions/{id or email}: `domain` picks one row of an address. */
export interface SuppressionRefQuery {
  domain?: string;
}

export const suppressionRefQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { domain: domainRef },
} as const;
