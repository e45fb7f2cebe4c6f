// The segment filter (DESIGN §5): a small JSON condition tree over contact fields, properties and
// topic subscriptions. The API checks its shape with ajv (api/schemas/segments.ts) and its
// meaning here (operator against field and value); shared/db/segments.ts compiles it to
// parameterised SQL.
import { propertyName } from './db/segments.js';
import { validationError } from './errors.js';

export type Scalar = string | number | boolean | null;

export type Op =
  'eq' | 'neq' | 'in' | 'not_in' | 'contains' | 'starts_with' | 'ends_with' | 'gt' | 'gte' | 'lt' | 'lte' | 'exists';

export const OPS: readonly Op[] = [
  'eq',
  'neq',
  'in',
  'not_in',
  'contains',
  'starts_with',
  'ends_with',
  'gt',
  'gte',
  'lt',
  'lte',
  'exists',
];

export const CONTACT_FIELDS = ['email', 'first_name', 'last_name', 'unsubscribed', 'created_at'] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

export interface FieldCondition {
  /** A contact field, or `properties.<name>`. */
  field: string;
  op: Op;
  value?: Scalar | Scalar[];
}
export interface TopicCondition {
  topic: string;
  subscribed: boolean;
}
export type SegmentFilter =
  { all: SegmentFilter[] } | { any: SegmentFilter[] } | { not: SegmentFilter } | FieldCondition | TopicCondition;

/** Nesting and size bounds: a filter is compiled into one SQL statement. */
export const MAX_FILTER_DEPTH = 5;
export const MAX_GROUP_ITEMS = 50;
export const MAX_FILTER_NODES = 200;
export const PROPERTY_NAME = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$';

const STRING_OPS: Op[] = ['eq', 'neq', 'in', 'not_in', 'contains', 'starts_with', 'ends_with', 'exists'];
const OPS_BY_FIELD: Record<ContactField, Op[]> = {
  email: STRING_OPS,
  first_name: STRING_OPS,
  last_name: STRING_OPS,
  unsubscribed: ['eq', 'neq'],
  created_at: ['gt', 'gte', 'lt', 'lte'],
};
const ISO_DATE = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?)?$/;

const isScalar = (v: unknown): v is Scalar => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** The value types `op` takes on a field of kind `kind`; the message fragment names them. */
function checkValue(kind: 'string' | 'boolean' | 'date' | 'property', op: Op, value: unknown, where: string): void {
  const fail = (what: string) => {
    throw validationError(`${where}.value must be ${what} for op ${op}`);
  };
  if (op === 'exists') {
    if (typeof value !== 'boolean') fail('true or false');
    return;
  }
  if (op === 'in' || op === 'not_in') {
    if (!Array.isArray(value) || value.length === 0) fail('a non-empty array');
    const arr = value as unknown[];
    if (kind === 'string' && !arr.every((v) => typeof v === 'string')) fail('an array of strings');
    if (!arr.every(isScalar)) fail('an array of strings, numbers, booleans or null');
    return;
  }
  if (op === 'contains' || op === 'starts_with' || op === 'ends_with') {
    if (typeof value !== 'string' || value.length === 0) fail('a non-empty string');
    return;
  }
  if (op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte') {
    if (kind === 'date' && (typeof value !== 'string' || !ISO_DATE.test(value) || Number.isNaN(Date.parse(value)))) {
      fail('an ISO 8601 date or date-time');
    }
    if (typeof value !== 'number' && typeof value !== 'string') fail('a number or a string');
    return;
  }
  // eq / neq
  if (kind === 'boolean' && typeof value !== 'boolean') fail('true or false');
  if (kind === 'string' && typeof value !== 'string' && value !== null) fail('a string or null');
  if (!isScalar(value) || value === undefined) fail('a string, number, boolean or null');
}

function checkField(c: FieldCondition, where: string): void {
  const prop = propertyName(c.field);
  if (prop !== null) return checkValue('property', c.op, c.value, where);
  const field = c.field as ContactField;
  if (!OPS_BY_FIELD[field].includes(c.op)) {
    throw validationError(`${where}.op must be one of ${OPS_BY_FIELD[field].join(', ')} for field ${field}`);
  }
  const kind = field === 'unsubscribed' ? 'boolean' : field === 'created_at' ? 'date' : 'string';
  checkValue(kind, c.op, c.value, where);
}

/**
 * Checks what the schema cannot: operator against field, value against operator, and the size of
 * the tree. Returns the topic ids the filter names (the caller checks they exist).
 */
export function checkFilter(filter: SegmentFilter, where = 'body.filter'): string[] {
  const topics = new Set<string>();
  let nodes = 0;
  const walk = (f: SegmentFilter, at: string): void => {
    if (++nodes > MAX_FILTER_NODES) throw validationError(`${where} has more than ${MAX_FILTER_NODES} conditions`);
    if ('all' in f) f.all.forEach((x, i) => walk(x, `${at}.all.${i}`));
    else if ('any' in f) f.any.forEach((x, i) => walk(x, `${at}.any.${i}`));
    else if ('not' in f) walk(f.not, `${at}.not`);
    else if ('topic' in f) topics.add(f.topic);
    else checkField(f, at);
  };
  walk(filter, where);
  return [...topics];
}

/** Where in the tree a topic id is named first (for a 422 message). */
export function topicPath(filter: SegmentFilter, topicId: string, at = 'body.filter'): string | null {
  if ('all' in filter || 'any' in filter) {
    const key = 'all' in filter ? 'all' : 'any';
    const list = 'all' in filter ? filter.all : (filter as { any: SegmentFilter[] }).any;
    for (let i = 0; i < list.length; i++) {
      const p = topicPath(list[i]!, topicId, `${at}.${key}.${i}`);
      if (p) return p;
    }
    return null;
  }
  if ('not' in filter) return topicPath(filter.not, topicId, `${at}.not`);
  return 'topic' in filter && filter.topic === topicId ? `${at}.topic` : null;
}
