// Request schemas of the domain routes (DESIGN §5).
import { paginationProperties } from '../validate.js';

export interface CreateDomainBody {
  name: string;
}

export const createDomainSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    // The syntax is checked after IDN normalisation (shared/mail/domain-name.ts).
    name: { type: 'string', minLength: 1, maxLength: 253 },
  },
} as const;

export interface UpdateDomainBody {
  open_tracking?: boolean | null;
  click_tracking?: boolean | null;
}

export const updateDomainSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // null = inherit the organization's tracking default.
    open_tracking: { type: 'boolean', nullable: true },
    click_tracking: { type: 'boolean', nullable: true },
  },
} as const;

export const listDomainsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
