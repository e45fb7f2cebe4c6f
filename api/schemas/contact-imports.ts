// Request schemas of contact imports and exports (DESIGN §16; docs/api/contacts.md "Imports").
import { PROPERTY_NAME } from '../../shared/segment-filter.js';
import { paginationProperties, type Pagination } from '../validate.js';

const column = { type: 'string', minLength: 1, maxLength: 256, description: 'A column of the header row.' } as const;

/** The `mapping` JSON (a query parameter or a form field): shared/contact-import-mapping.ts. */
export const contactImportMappingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  description:
    'Which column holds what. Columns are named as in the header row (compared trimmed, ignoring case); an empty cell leaves the stored value as it is.',
  properties: {
    email: column,
    first_name: column,
    last_name: column,
    unsubscribed: { ...column, description: 'true/false, yes/no, 1/0; an import never turns it off.' },
    properties: {
      type: 'object',
      maxProperties: 50,
      propertyNames: { pattern: PROPERTY_NAME },
      description:
        'Property name → its column, or `{column, type}` with type `string` (default), `number` or `boolean`.',
      additionalProperties: {
        anyOf: [
          column,
          {
            type: 'object',
            additionalProperties: false,
            required: ['column'],
            properties: { column, type: { type: 'string', enum: ['string', 'number', 'boolean'] } },
          },
        ],
      },
    },
    topics: {
      type: 'object',
      maxProperties: 100,
      propertyNames: { minLength: 1, maxLength: 64 },
      description: 'Topic id → the column holding the choice: opt_in/opt_out (or true/false, yes/no, 1/0).',
      additionalProperties: column,
    },
  },
} as const;

export interface ContactImportQuery {
  /** The mapping as JSON text (or the multipart field `mapping`). */
  mapping?: string;
  trigger_automations?: boolean;
}

export const contactImportQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    mapping: {
      type: 'string',
      minLength: 2,
      maxLength: 65536,
      description:
        'The column mapping as JSON (`ContactImportMapping`); with multipart/form-data it may come as the field `mapping` instead. Default: the columns `email`, `first_name`, `last_name`, `unsubscribed`.',
    },
    trigger_automations: {
      type: 'boolean',
      default: false,
      description: 'Start `contact_created` automations for the contacts the import creates (default: none).',
    },
  },
} as const;

export type ListContactImportsQuery = Pagination;

export const listContactImportsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...paginationProperties },
} as const;

export interface CreateContactExportBody {
  segment_id?: string;
}

export const createContactExportSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    segment_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Only the contacts of this segment.' },
  },
} as const;
