// ajv validation of request bodies and queries. A failure is 422 validation_error whose message
// names the field, e.g. "body.permission must be one of SEND, FULL".
import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import * as formatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { validationError } from '../shared/errors.js';

// ajv-formats ships CJS with a default export; under NodeNext the callable sits on .default.
const addFormats = (formatsModule as unknown as { default: FormatsPlugin }).default;

const bodyAjv = new Ajv({ allErrors: false, strict: true, useDefaults: true });
const queryAjv = new Ajv({ allErrors: false, strict: true, useDefaults: true, coerceTypes: true });
addFormats(bodyAjv);
addFormats(queryAjv);

function describe(where: string, e: ErrorObject): string {
  const path = e.instancePath ? `${where}${e.instancePath.replace(/\//g, '.')}` : where;
  switch (e.keyword) {
    case 'required':
      return `${where}${e.instancePath.replace(/\//g, '.')}.${String(e.params.missingProperty)} is required`;
    case 'additionalProperties':
      return `${path}.${String(e.params.additionalProperty)} is not a known field`;
    case 'enum':
      return `${path} must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    default:
      return `${path} ${e.message ?? 'is invalid'}`;
  }
}

export type Validator<T> = (value: unknown) => T;

function make<T>(fn: ValidateFunction<T>, where: string): Validator<T> {
  return (value: unknown): T => {
    if (fn(value)) return value;
    const first = fn.errors?.[0];
    throw validationError(first ? describe(where, first) : `${where} is invalid`);
  };
}

/** Compiles a body schema; the validator throws 422 on failure and returns the typed value. */
export function bodyValidator<T>(schema: JSONSchemaType<T> | object): Validator<T> {
  const fn = bodyAjv.compile<T>(schema as JSONSchemaType<T>);
  return (value: unknown) => make(fn, 'body')(value === undefined ? {} : value);
}

/** Compiles a query schema (strings coerced to the schema's types). */
export function queryValidator<T>(schema: JSONSchemaType<T> | object): Validator<T> {
  const fn = queryAjv.compile<T>(schema as JSONSchemaType<T>);
  return (value: unknown) => make(fn, 'query')({ ...(value as object) });
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
