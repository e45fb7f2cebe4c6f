// Request schemas of the automation routes (DESIGN §5 "Events and automations", §16).
import type { AutomationStep, AutomationTrigger } from '../../shared/db/automations.js';
import { EMAIL_EVENT_TYPES } from '../../shared/events.js';
import { MAX_FILTER_DEPTH } from '../../shared/segment-filter.js';
import { paginationProperties, type Pagination } from '../validate.js';
import { properties as contactProperties } from './contacts.js';
import { byKey, fieldCondition, group, scalar, topicCondition } from './segments.js';

const trigger = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['event'],
      properties: { event: { type: 'string', minLength: 1, maxLength: 100, format: 'label' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['contact_created'],
      properties: { contact_created: { const: true } },
    },
  ],
} as const;

const duration = { type: 'string', minLength: 2, maxLength: 32 } as const;
const target = { type: 'string', minLength: 1, maxLength: 64, format: 'label' } as const;
const segmentId = { type: 'string', minLength: 1, maxLength: 64 } as const;

const inSegment = {
  type: 'object',
  additionalProperties: false,
  required: ['in_segment'],
  properties: { in_segment: segmentId },
} as const;

const lastEvent = {
  type: 'object',
  additionalProperties: false,
  required: ['last_event'],
  properties: {
    last_event: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
        within: duration,
        properties: { type: 'object', maxProperties: 20, additionalProperties: scalar },
      },
    },
  },
} as const;

const emailEvent = {
  type: 'object',
  additionalProperties: false,
  required: ['email_event'],
  properties: {
    email_event: {
      type: 'object',
      additionalProperties: false,
      required: ['type'],
      properties: { type: { type: 'string', enum: EMAIL_EVENT_TYPES }, last: { type: 'boolean' } },
    },
  },
} as const;

/** A condition node that may hold `depth` more levels of groups (as the segment filter). */
function level(depth: number): object {
  const leaves: [string, object][] = [
    ['topic', topicCondition],
    ['in_segment', inSegment],
    ['last_event', lastEvent],
    ['email_event', emailEvent],
  ];
  if (depth === 0) return { type: 'object', ...byKey(leaves, fieldCondition) };
  const child = { $ref: `#/$defs/condition${depth - 1}` };
  const groups: [string, object][] = [
    ['all', group('all', child)],
    ['any', group('any', child)],
    ['not', { type: 'object', additionalProperties: false, required: ['not'], properties: { not: child } }],
  ];
  return { type: 'object', ...byKey([...groups, ...leaves], fieldCondition) };
}

const conditionDefs = Object.fromEntries(
  Array.from({ length: MAX_FILTER_DEPTH + 1 }, (_, depth) => [`condition${depth}`, level(depth)]),
);

/**
 * One step: every step type's field is optional here, and the API checks that a step carries
 * exactly one (shared/automation-steps.ts checkGraph), so an error names the step and says what
 * is wrong rather than "must match exactly one schema in oneOf".
 */
const step = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: target,
    next: target,
    wait: duration,
    send: {
      type: 'object',
      additionalProperties: false,
      required: ['template', 'from'],
      properties: {
        template: { type: 'string', minLength: 1, maxLength: 200 },
        from: { type: 'string', minLength: 1, maxLength: 512 },
        subject: { type: 'string', minLength: 1, maxLength: 998 },
        kind: { type: 'string', minLength: 1, maxLength: 64, format: 'label' },
      },
    },
    condition: { $ref: `#/$defs/condition${MAX_FILTER_DEPTH}` },
    then: target,
    else: target,
    wait_for_event: {
      type: 'object',
      additionalProperties: false,
      required: ['event', 'timeout'],
      properties: {
        event: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
        timeout: duration,
      },
    },
    on_timeout: target,
    update_contact: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        first_name: { type: ['string', 'null'], maxLength: 256, format: 'label' },
        last_name: { type: ['string', 'null'], maxLength: 256, format: 'label' },
        properties: contactProperties,
      },
    },
    add_to_segment: segmentId,
    remove_from_segment: segmentId,
    webhook: {
      type: 'object',
      additionalProperties: false,
      required: ['webhook_id'],
      properties: {
        webhook_id: { type: 'string', minLength: 1, maxLength: 64 },
        payload: { type: 'object', maxProperties: 50 },
      },
    },
  },
} as const;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 256, format: 'label' },
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
  $defs: conditionDefs,
} as const;

export type PatchAutomationBody = Partial<CreateAutomationBody>;

export const patchAutomationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: fields,
  $defs: conditionDefs,
} as const;

export type AutomationListQuery = Pagination;

export const RUN_STATUSES = ['active', 'completed', 'stopped', 'failed', 'exited'] as const;

export interface RunListQuery extends Pagination {
  status?: (typeof RUN_STATUSES)[number];
}

export const runListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...paginationProperties, status: { type: 'string', enum: RUN_STATUSES } },
} as const;

export const automationListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
