// Rows inserted in bulk travel as ONE array parameter per column, read back into rows by
// `unnest` (STYLE §1). A statement then has as many parameters as the table has columns, however
// many rows it carries: one parameter per cell would stop at the protocol's 65,535 parameters
// (a batch of 100 messages with 150 recipients each passes it), and its text would change with
// the number of rows, so it could not be prepared once.
import type postgres from 'postgres';
import type { Db } from './pool.js';

/** Postgres type of a column; `text[]` and `jsonb` values travel as text and are cast back. */
export type ColumnType = 'text' | 'integer' | 'boolean' | 'timestamptz' | 'bytea' | 'jsonb' | 'text[]';

/** Column name → its type, in the table's order of insertion. */
export type ColumnSpec<R> = { readonly [K in keyof R & string]?: ColumnType };

// The parameter's declared type: postgres.js infers a Buffer, a Date or a boolean as a scalar
// (bytea, timestamptz, bool), which the server cannot cast to an array, so every column is sent
// as an explicitly typed array.
const OID: Record<ColumnType, number> = {
  text: 25,
  integer: 23,
  boolean: 16,
  timestamptz: 1184,
  bytea: 17,
  jsonb: 25,
  'text[]': 25,
};

const PG_TYPE: Record<ColumnType, string> = {
  text: 'text',
  integer: 'integer',
  boolean: 'boolean',
  timestamptz: 'timestamptz',
  bytea: 'bytea',
  jsonb: 'text',
  'text[]': 'text',
};

/** A text[] value as a Postgres array literal (a 2-D array cannot hold rows of unequal length). */
export function arrayLiteral(list: readonly string[]): string {
  return `{${list.map((s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`;
}

function cell(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'jsonb') return JSON.stringify(value);
  if (type === 'text[]') return arrayLiteral(value as string[]);
  return value;
}

function join(db: Db, parts: postgres.PendingQuery<postgres.Row[]>[]) {
  return parts.reduce((acc, part) => db`${acc}, ${part}`);
}

export interface Unnested {
  /** `"a", "b", …`: the column list of the INSERT. */
  columns: postgres.PendingQuery<postgres.Row[]>;
  /** `select … from unnest($1::text[], …) as u(…)`: the rows. */
  select: postgres.PendingQuery<postgres.Row[]>;
}

/** The rows as `insert into t (${u.columns}) ${u.select}`; `rows` must not be empty. */
export function unnestRows<R>(db: Db, rows: readonly R[], spec: ColumnSpec<R>): Unnested {
  const columns = Object.entries(spec) as [string, ColumnType][];
  const ident = (name: string) => db`${db(name)}`;
  const params = columns.map(([name, type]) => {
    const values = rows.map((r) => cell(type, (r as Record<string, unknown>)[name]));
    return db`${db.array(values as never[], OID[type])}::${db.unsafe(PG_TYPE[type])}[]`;
  });
  const reads = columns.map(([name, type]) =>
    type === 'jsonb' || type === 'text[]' ? db`u.${ident(name)}::${db.unsafe(type)}` : db`u.${ident(name)}`,
  );
  const names = join(
    db,
    columns.map(([name]) => ident(name)),
  );
  return {
    columns: names,
    select: db`select ${join(db, reads)} from unnest(${join(db, params)}) as u(${names})`,
  };
}
