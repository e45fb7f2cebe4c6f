// Request schemas of the template routes (DESIGN §5 Templates).
import type { TemplateVariable } from '../../shared/db/templates.js';
import { VARIABLE_KEY_PATTERN } from '../../shared/templates.js';
import { paginationProperties } from '../validate.js';

export const SLUG_PATTERN = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
const MAX_SOURCE = 512 * 1024;

const nullableString = (maxLength: number) => ({ type: 'string', maxLength, nullable: true }) as const;

const variableSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'type'],
  properties: {
    key: { type: 'string', pattern: VARIABLE_KEY_PATTERN },
    type: { type: 'string', enum: ['string', 'number'] },
    fallback_value: {
      anyOf: [{ type: 'string', maxLength: 2000 }, { type: 'number' }, { type: 'null' }],
    },
  },
} as const;

const draftProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200, format: 'label' },
  slug: { type: 'string', minLength: 1, maxLength: 64, pattern: SLUG_PATTERN },
  subject: nullableString(998),
  html: nullableString(MAX_SOURCE),
  text: nullableString(MAX_SOURCE),
  // The sender is checked like any from address when a send uses it; here only its shape.
  from: { type: 'string', minLength: 3, maxLength: 320, pattern: '@', nullable: true },
  variables: { type: 'array', maxItems: 50, items: variableSchema },
} as const;

export interface TemplateDraftBody {
  name?: string;
  slug?: string;
  subject?: string | null;
  html?: string | null;
  text?: string | null;
  from?: string | null;
  variables?: TemplateVariable[];
}

export type CreateTemplateBody = TemplateDraftBody & { name: string };

export const createTemplateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: draftProperties,
} as const;

export const updateTemplateSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: draftProperties,
} as const;

export const listTemplatesQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
