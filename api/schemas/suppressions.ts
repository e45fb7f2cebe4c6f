// Request schemas of the suppression routes (DESIGN §5 Suppressions).
import type { SuppressionReason } from '../../shared/db/suppressions.js';
import { paginationProperties, type Pagination } from '../validate.js';

const domainRef = { type: 'string', minLength: 1, maxLength: 253 } as const;

export interface CreateSuppressionBody {
  /** One address; or `pattern` (exactly one of the two, checked by the handler). */
  email?: string;
  /** A rule: a glob with `*` only (shared/suppression-patterns.ts). */
  pattern?: string;
  /** Domain name or id; absent = organization-wide. */
  domain?: string;
}

export const createSuppressionSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Exactly one of `email` and `pattern`.',
  properties: {
    email: { type: 'string', maxLength: 320, format: 'email' },
    pattern: {
      type: 'string',
      minLength: 1,
      maxLength: 320,
      description:
        '`<local>@<domain>` with `*` as the only wildcard: `*@example.com`, `*@*.example.com`, `bounce-*@*`, `noreply*@example.com`.',
    },
    domain: domainRef,
  },
} as const;

export interface ListSuppressionsQuery extends Pagination {
  email?: string;
  pattern?: string;
  type?: 'address' | 'pattern';
  reason?: SuppressionReason;
  domain?: string;
}

export const listSuppressionsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paginationProperties,
    email: { type: 'string', minLength: 1, maxLength: 320 },
    pattern: { type: 'string', minLength: 1, maxLength: 320 },
    type: { type: 'string', enum: ['address', 'pattern'] },
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

const reasonEnum = { type: 'string', enum: ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] } as const;

/** POST /suppressions/imports: the defaults of rows that do not say. */
export interface SuppressionImportQuery {
  domain?: string;
  reason?: SuppressionReason;
}

export const suppressionImportQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    domain: { ...domainRef, description: 'The domain of rows without a `domain` cell (default: organization-wide).' },
    reason: { ...reasonEnum, description: 'The reason of rows without a `reason` cell (default `manual`).' },
  },
} as const;

export interface SuppressionExportQuery {
  reason?: SuppressionReason;
  domain?: string;
  type?: 'address' | 'pattern';
}

export const suppressionExportQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { reason: reasonEnum, domain: domainRef, type: { type: 'string', enum: ['address', 'pattern'] } },
} as const;
