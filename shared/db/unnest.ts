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

// Each column travels as ONE text parameter holding a Postgres array literal, which the
// statement casts (`$1::integer[]`). Writing the literal here, rather than passing a JavaScript
// array for postgres.js to type, keeps the statement independent of the array types postgres.js
// fetches when a connection opens: on a new pool, a statement whose parameters were made before
// that fetch was typed as a scalar ("cannot cast type integer to integer[]").
const PG_TYPE: Record<ColumnType, string> = {
  text: 'text',
  integer: 'integer',
  boolean: 'boolean',
  timestamptz: 'timestamptz',
  bytea: 'bytea',
  jsonb: 'text',
  'text[]': 'text',
};

/** One element of an array literal: always quoted (so that the text NULL stays text), escaped. */
const quoted = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** A text[] value as a Postgres array literal (a 2-D array cannot hold rows of unequal length). */
export function arrayLiteral(list: readonly string[]): string {
  return `{${list.map(quoted).join(',')}}`;
}

/** One cell as an element of the column's array literal. */
function element(type: ColumnType, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  switch (type) {
    case 'integer':
      return String(Math.trunc(Number(value)));
    case 'boolean':
      return value ? 't' : 'f';
    case 'timestamptz':
      return quoted(value instanceof Date ? value.toISOString() : new Date(value as string | number).toISOString());
    case 'bytea':
      return quoted(
        `\\x${Buffer.isBuffer(value) ? value.toString('hex') : Buffer.from(value as Uint8Array).toString('hex')}`,
      );
    case 'jsonb':
      return quoted(JSON.stringify(value));
    case 'text[]':
      return quoted(arrayLiteral(value as string[]));
    default:
      return quoted(typeof value === 'string' ? value : String(value as number | bigint));
  }
}

function column(type: ColumnType, rows: readonly unknown[], name: string): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    out += element(type, (rows[i] as Record<string, unknown>)[name]);
  }
  return out + '}';
}

export interface Unnested {
  /** `"a", "b", …`: the column list of the INSERT. */
  columns: postgres.PendingQuery<postgres.Row[]>;
  /** `select … from unnest($1::text[], …) as u(…)`: the rows. */
  select: postgres.PendingQuery<postgres.Row[]>;
}

/** The constant SQL of one column spec: built once, then only the parameters change. */
interface Shape {
  columns: [string, ColumnType][];
  /** The column list, quoted. */
  names: string;
  /** The select's text around its parameters, as a tagged template's strings. */
  strings: TemplateStringsArray;
}

const shapes = new WeakMap<object, Shape>();

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

function shapeOf(spec: object): Shape {
  let shape = shapes.get(spec);
  if (shape) return shape;
  const columns = Object.entries(spec) as [string, ColumnType][];
  const names = columns.map(([name]) => quote(name)).join(', ');
  const reads = columns
    .map(([name, type]) => (type === 'jsonb' || type === 'text[]' ? `u.${quote(name)}::${type}` : `u.${quote(name)}`))
    .join(', ');
  // select <reads> from unnest($1::text[], $2::integer[], …) as u(<names>)
  const parts = [`select ${reads} from unnest(`];
  columns.forEach(([, type], i) =>
    parts.push(`::${PG_TYPE[type]}[]${i < columns.length - 1 ? ', ' : `) as u(${names})`}`),
  );
  const strings = Object.assign([...parts], { raw: [...parts] }) as unknown as TemplateStringsArray;
  shape = { columns, names, strings };
  shapes.set(spec, shape);
  return shape;
}

/**
 * The rows as `insert into t (${u.columns}) ${u.select}`; `rows` must not be empty. The
 * statement's text depends only on `spec` (pass the same object each time): it is built once and
 * prepared once, and a call costs two query fragments, not several per column.
 */
export function unnestRows<R>(db: Db, rows: readonly R[], spec: ColumnSpec<R>): Unnested {
  const shape = shapeOf(spec);
  const params = shape.columns.map(([name, type]) => column(type, rows, name));
  return {
    columns: db.unsafe(shape.names),
    select: (db as unknown as (s: TemplateStringsArray, ...a: unknown[]) => postgres.PendingQuery<postgres.Row[]>)(
      shape.strings,
      ...params,
    ),
  };
}
