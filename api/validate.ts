// ajv validation of request bodies and queries. A failure is 422 validation_error whose message
// names the field, e.g. "body.permission must be one of SEND, FULL". Before the schema, every
// string of the value (object keys too) is checked for NUL (api/text-checks.ts), so no schema
// has to say it; the `label` format refuses every control character in a label-like field.
import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import * as formatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { validationError } from '../shared/errors.js';
import { hasControl, textProblem } from './text-checks.js';

// ajv-formats ships CJS with a default export; under NodeNext the callable sits on .default.
const addFormats = (formatsModule as unknown as { default: FormatsPlugin }).default;

const bodyAjv = new Ajv({ allErrors: false, strict: true, useDefaults: true });
const queryAjv = new Ajv({ allErrors: false, strict: true, useDefaults: true, coerceTypes: true });
addFormats(bodyAjv);
addFormats(queryAjv);
// A name, a kind, a label: one line of text without control characters (C0 and DEL).
for (const ajv of [bodyAjv, queryAjv]) ajv.addFormat('label', { type: 'string', validate: (s) => !hasControl(s) });

function describe(where: string, e: ErrorObject): string {
  const path = e.instancePath ? `${where}${e.instancePath.replace(/\//g, '.')}` : where;
  switch (e.keyword) {
    case 'required':
      return `${where}${e.instancePath.replace(/\//g, '.')}.${String(e.params.missingProperty)} is required`;
    case 'additionalProperties':
      return `${path}.${String(e.params.additionalProperty)} is not a known field`;
    case 'enum':
      return `${path} must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    case 'format':
      if (e.params.format === 'label') return `${path} must not contain control characters (line breaks, tabs, …)`;
      break;
  }
  return `${path} ${e.message ?? 'is invalid'}`;
}

export type Validator<T> = (value: unknown) => T;

function make<T>(fn: ValidateFunction<T>, where: string, walk: boolean): Validator<T> {
  return (value: unknown): T => {
    const problem = walk ? textProblem(value, where) : null;
    if (problem) throw validationError(problem);
    if (fn(value)) return value;
    const first = fn.errors?.[0];
    throw validationError(first ? describe(where, first) : `${where} is invalid`);
  };
}

/**
 * Compiles a body schema; the validator throws 422 on failure and returns the typed value.
 * `itemsApart`: the items of this (array) body are validated one by one, each with its own
 * validator, and the text check is theirs (a batch item's error names its index).
 */
export function bodyValidator<T>(schema: JSONSchemaType<T> | object, itemsApart = false): Validator<T> {
  const check = make(bodyAjv.compile<T>(schema as JSONSchemaType<T>), 'body', !itemsApart);
  return (value: unknown) => check(value === undefined ? {} : value);
}

/** Compiles a schema for a JSON value found elsewhere than the body (a form field); errors name `where`. */
export function valueValidator<T>(schema: object, where: string): Validator<T> {
  return make(bodyAjv.compile<T>(schema as JSONSchemaType<T>), where, true);
}

/** Compiles a query schema (strings coerced to the schema's types). */
export function queryValidator<T>(schema: JSONSchemaType<T> | object): Validator<T> {
  const check = make(queryAjv.compile<T>(schema as JSONSchemaType<T>), 'query', true);
  return (value: unknown) => check({ ...(value as object) });
}

/** The list-pagination query of DESIGN §5: limit 1–100 (default 20), after / before ids. */
export const paginationProperties = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  after: { type: 'string', minLength: 1, maxLength: 64 },
  before: { type: 'string', minLength: 1, maxLength: 64 },
} as const;

export interface Pagination {
  limit: number;
  after?: string;
  before?: string;
}

/** Wraps `limit + 1` fetched rows into the list envelope. */
export function listEnvelope<R, O>(rows: R[], limit: number, render: (row: R) => O) {
  const hasMore = rows.length > limit;
  return { object: 'list' as const, data: rows.slice(0, limit).map(render), has_more: hasMore };
}
