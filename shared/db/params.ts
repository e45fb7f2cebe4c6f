// Values handed to postgres.js's helpers. postgres.js types what they take narrowly: json() its
// own JSONValue, sql(row) and array() the serializable types of the pool's custom-type map (empty
// here, so `never`). Rows and documents typed as interfaces or `unknown` satisfy none of them, so
// these helpers are the one place that casts (eslint refuses `as never` anywhere else); call sites
// stay typed.
import type postgres from 'postgres';
import type { Db } from './pool.js';

/** `value` as one json parameter (a plain array would otherwise go as a Postgres array). */
export function jsonParam(db: Db, value: unknown): postgres.Parameter {
  return db.json(value as never);
}

/**
 * A row's columns for `insert … ${row}` or `update … set ${row}` (only `columns`, when given).
 * Typed as what postgres.js's overloads pick for `never`: a fragment, which is what it is.
 */
export function rowParam(db: Db, row: object, columns?: readonly string[]) {
  return columns ? db(row as never, columns as never) : db(row as never);
}

/** A bytea[] parameter. */
export function byteaArray(db: Db, values: Buffer[]): postgres.ArrayParameter<Buffer[]> {
  return db.array(values as never, 1001);
}

/** Positional parameters of `db.unsafe(text, params)`. */
export function unsafeParams(params: unknown[]): postgres.ParameterOrJSON<never>[] {
  return params as never[];
}
