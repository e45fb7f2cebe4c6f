// Request schemas of the segment routes (DESIGN §5 Segments). The filter tree is nested
// explicitly to MAX_FILTER_DEPTH levels, so ajv itself refuses a deeper tree; each node is told
// apart by its key (all / any / not / topic / field) so that an error names the exact node.
import {
  CONTACT_FIELDS,
  MAX_FILTER_DEPTH,
  MAX_GROUP_ITEMS,
  OPS,
  PROPERTY_NAME,
  type SegmentFilter,
} from '../../shared/segment-filter.js';
import { paginationProperties, type Pagination } from '../validate.js';

export const scalar = {
  anyOf: [{ type: 'string', maxLength: 1000 }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
} as const;

export const fieldCondition = {
  type: 'object',
  additionalProperties: false,
  required: ['field', 'op'],
  properties: {
    field: {
      type: 'string',
      pattern: `^(${CONTACT_FIELDS.join('|')}|properties\\.${PROPERTY_NAME.slice(1, -1)})$`,
    },
    op: { type: 'string', enum: OPS },
    value: { anyOf: [scalar, { type: 'array', maxItems: 100, items: scalar }] },
  },
} as const;

export const topicCondition = {
  type: 'object',
  additionalProperties: false,
  required: ['topic', 'subscribed'],
  properties: {
    topic: { type: 'string', minLength: 1, maxLength: 64 },
    subscribed: { type: 'boolean' },
  },
} as const;

/** `if the node has <key> then <schema> else <rest>`, chained. */
export function byKey(branches: [string, object][], last: object): object {
  return branches.reduceRight<object>(
    (rest, [key, schema]) => ({
      if: { type: 'object', required: [key], properties: { [key]: true } },
      then: schema,
      else: rest,
    }),
    last,
  );
}

export function group(key: 'all' | 'any', child: object): object {
  return {
    type: 'object',
    additionalProperties: false,
    required: [key],
    properties: { [key]: { type: 'array', maxItems: MAX_GROUP_ITEMS, items: child } },
  };
}

/**
 * A node that may hold `depth` more levels of groups below it. Each level is one definition that
 * refers to the level below: written inline, every level would copy its child three times (all,
 * any, not), 3^depth copies in all, and ajv took seconds to compile them at start-up.
 */
function level(depth: number): object {
  const leaves = byKey([['topic', topicCondition]], fieldCondition);
  const base = { type: 'object' };
  if (depth === 0) return { ...base, ...leaves };
  const child = { $ref: `#/$defs/filter${depth - 1}` };
  const groups: [string, object][] = [
    ['all', group('all', child)],
    ['any', group('any', child)],
    ['not', { type: 'object', additionalProperties: false, required: ['not'], properties: { not: child } }],
  ];
  return { ...base, ...byKey([...groups, ['topic', topicCondition]], fieldCondition) };
}

const filterDefs = Object.fromEntries(
  Array.from({ length: MAX_FILTER_DEPTH + 1 }, (_, depth) => [`filter${depth}`, level(depth)]),
);
const filterRef = { $ref: `#/$defs/filter${MAX_FILTER_DEPTH}` } as const;

export interface CreateSegmentBody {
  name: string;
  filter: SegmentFilter;
}

export const createSegmentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
    // Absent (as from a Resend SDK, whose segments carry no filter): a static segment, which
    // selects nobody by itself and holds the contacts added to it (POST /contacts/{id}/segments/{id}).
    filter: { ...filterRef, default: { any: [] } },
  },
  $defs: filterDefs,
} as const;

export type PatchSegmentBody = Partial<CreateSegmentBody>;

export const patchSegmentSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, format: 'label' },
    filter: filterRef,
  },
  $defs: filterDefs,
} as const;

export type SegmentListQuery = Pagination;

export const segmentListQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
} as const;
