// Request schemas of the automation routes (DESIGN §5 "Events and automations").
import type { AutomationStep, AutomationTrigger } from '../../shared/db/automations.js';
import { paginationProperties, type Pagination } from '../validate.js';

const trigger = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['event'],
      properties: { event: { type: 'string', minLength: 1, maxLength: 100 } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['contact_created'],
      properties: { contact_created: { const: true } },
    },
  ],
} as const;

const step = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['wait'],
      properties: { wait: { type: 'string', minLength: 2, maxLength: 32 } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['send'],
      properties: {
        send: {
          type: 'object',
          additionalProperties: false,
          required: ['template', 'from'],
          properties: {
            template: { type: 'string', minLength: 1, maxLength: 200 },
            from: { type: 'string', minLength: 1, maxLength: 512 },
            subject: { type: 'string', minLength: 1, maxLength: 998 },
            kind: { type: 'string', minLength: 1, maxLength: 64 },
          },
        },
      },
    },
  ],
} as const;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 256 },
  trigger,
  steps: { type: 'array', minItems: 1, maxItems: 50, items: step },
  status: { type: 'string', enum: ['enabled', 'disabled'] },
} as const;

export interface CreateAutomationBody {
  name: string;
  trigger: AutomationTrigger;
  steps: AutomationStep[];
  status?: 'enabled' | 'disabled';
}

export const createAutomationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'trigger', 'steps'],
  properties: fields,
} as const;

export type PatchAutomationBody = Partial<CreateAutomationBody>;

export const patchAutomationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: fields,
} as const;

export type AutomationListQuery = Pagination;

export const automationListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
