// The column mapping of a contact import (docs/api/contacts.md "Imports"): which CSV column
// holds the address, the names, `unsubscribed`, each property (with its type) and each topic
// choice. Columns are named as in the header row (compared trimmed, ignoring case). An empty
// cell leaves the contact's value as it is; a cell that cannot be read fails its row, whole.
import type { PropertyValue } from './db/contacts.js';
import type { Subscription } from './db/topics.js';
import { parseAddress } from './mail/addresses.js';

export type PropertyType = 'string' | 'number' | 'boolean';

export interface ImportMapping {
  email: string;
  first_name?: string;
  last_name?: string;
  unsubscribed?: string;
  /** Property name → its column, or `{column, type}` (type `string` by default). */
  properties?: Record<string, string | { column: string; type?: PropertyType }>;
  /** Topic id → the column holding the contact's choice. */
  topics?: Record<string, string>;
}

export interface ResolvedMapping {
  email: number;
  firstName: number | null;
  lastName: number | null;
  unsubscribed: number | null;
  properties: { name: string; index: number; type: PropertyType }[];
  topics: { id: string; index: number }[];
}

export interface ImportRow {
  /** Lower case. */
  email: string;
  firstName: string | null;
  lastName: string | null;
  /** Only the properties whose cells were not empty. */
  properties: Record<string, PropertyValue>;
  /** null: the cell was empty (or not mapped). */
  unsubscribed: boolean | null;
  topics: { id: string; subscription: Subscription }[];
}

export interface RowFailure {
  email: string | null;
  reason: string;
}

const NAME_MAX = 256;
const STRING_MAX = 2000;
const TRUE = new Set(['true', 'yes', 'y', '1', 't']);
const FALSE = new Set(['false', 'no', 'n', '0', 'f']);
const OPT_IN = new Set(['opt_in', 'subscribed', ...TRUE]);
const OPT_OUT = new Set(['opt_out', 'unsubscribed', ...FALSE]);
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\x00-\x1f\x7f]/;

const norm = (s: string) => s.trim().toLowerCase();

/** The mapping used when none is given: `email`, `first_name`, `last_name`, `unsubscribed` columns. */
export function defaultMapping(header: string[]): ImportMapping {
  const names = new Set(header.map(norm));
  const m: ImportMapping = { email: 'email' };
  for (const f of ['first_name', 'last_name', 'unsubscribed'] as const) if (names.has(f)) m[f] = f;
  return m;
}

/** Every column the mapping names, for the check against the header. */
function namedColumns(m: ImportMapping): string[] {
  const props = Object.values(m.properties ?? {}).map((p) => (typeof p === 'string' ? p : p.column));
  return [m.email, m.first_name, m.last_name, m.unsubscribed, ...props, ...Object.values(m.topics ?? {})].filter(
    (c): c is string => c !== undefined,
  );
}

/** Column positions of the mapping in this header; the reason names the columns it lacks. */
export function resolveMapping(
  m: ImportMapping,
  header: string[],
): { ok: true; value: ResolvedMapping } | { ok: false; reason: string } {
  const index = new Map<string, number>();
  header.forEach((h, i) => {
    if (!index.has(norm(h))) index.set(norm(h), i);
  });
  const missing = namedColumns(m).filter((c) => !index.has(norm(c)));
  if (missing.length > 0) {
    const shown = header.slice(0, 20).map((h) => JSON.stringify(h.trim()));
    return {
      ok: false,
      reason: `the header row has no column ${[...new Set(missing)].map((c) => JSON.stringify(c)).join(', ')} (it has ${shown.join(', ')}${header.length > 20 ? ', …' : ''})`,
    };
  }
  const at = (c: string | undefined) => (c === undefined ? null : index.get(norm(c))!);
  return {
    ok: true,
    value: {
      email: at(m.email)!,
      firstName: at(m.first_name),
      lastName: at(m.last_name),
      unsubscribed: at(m.unsubscribed),
      properties: Object.entries(m.properties ?? {}).map(([name, p]) => ({
        name,
        index: at(typeof p === 'string' ? p : p.column)!,
        type: typeof p === 'string' ? 'string' : (p.type ?? 'string'),
      })),
      topics: Object.entries(m.topics ?? {}).map(([id, column]) => ({ id, index: at(column)! })),
    },
  };
}

class CellError extends Error {}

function nameCell(value: string, field: string): string | null {
  if (value === '') return null;
  if (value.length > NAME_MAX) throw new CellError(`${field} is longer than ${NAME_MAX} characters`);
  if (CONTROL.test(value)) throw new CellError(`${field} contains control characters`);
  return value;
}

function booleanCell(value: string, field: string): boolean {
  const v = value.toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new CellError(`${field} must be true or false (or yes/no, 1/0), not ${JSON.stringify(value.slice(0, 50))}`);
}

function propertyCell(value: string, name: string, type: PropertyType): PropertyValue {
  const field = `property ${name}`;
  if (type === 'boolean') return booleanCell(value, field);
  if (type === 'number') {
    const n = Number(value);
    if (!NUMBER.test(value) || !Number.isFinite(n)) {
      throw new CellError(`${field} must be a number, not ${JSON.stringify(value.slice(0, 50))}`);
    }
    return n;
  }
  if (value.length > STRING_MAX) throw new CellError(`${field} is longer than ${STRING_MAX} characters`);
  if (value.includes('\u0000')) throw new CellError(`${field} contains a NUL character`);
  return value;
}

function topicCell(value: string, id: string): Subscription {
  const v = value.toLowerCase();
  if (OPT_IN.has(v)) return 'opt_in';
  if (OPT_OUT.has(v)) return 'opt_out';
  throw new CellError(
    `topic ${id} must be opt_in or opt_out (or true/false), not ${JSON.stringify(value.slice(0, 50))}`,
  );
}

/** One record as the row to apply, or why it cannot be (its address, when it has one). */
export function readContactRow(cells: string[], m: ResolvedMapping): ImportRow | RowFailure {
  const cell = (i: number | null) => (i === null ? '' : (cells[i] ?? '').trim());
  const raw = cell(m.email);
  const shown = raw.slice(0, 320) || null;
  if (raw === '') return { email: null, reason: 'the email cell is empty' };
  if (raw.includes('\u0000')) return { email: null, reason: 'the email cell contains a NUL character' };
  const address = parseAddress(raw);
  if (!address.ok) return { email: shown, reason: `the email ${address.reason}` };
  try {
    const properties: Record<string, PropertyValue> = {};
    for (const p of m.properties) {
      const v = cell(p.index);
      if (v !== '') properties[p.name] = propertyCell(v, p.name, p.type);
    }
    const unsub = cell(m.unsubscribed);
    return {
      email: address.mailbox.email,
      firstName: nameCell(cell(m.firstName), 'first_name'),
      lastName: nameCell(cell(m.lastName), 'last_name'),
      properties,
      unsubscribed: unsub === '' ? null : booleanCell(unsub, 'unsubscribed'),
      topics: m.topics.flatMap((t) => {
        const v = cell(t.index);
        return v === '' ? [] : [{ id: t.id, subscription: topicCell(v, t.id) }];
      }),
    };
  } catch (err) {
    if (err instanceof CellError) return { email: address.mailbox.email, reason: err.message };
    throw err;
  }
}

export function isFailure(r: ImportRow | RowFailure): r is RowFailure {
  return 'reason' in r;
}

/** The mapping as one canonical text (keys sorted), for the re-upload check. */
export function canonicalMapping(m: ImportMapping): string {
  const sort = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
        )
      : v;
  return JSON.stringify(sort(m));
}
