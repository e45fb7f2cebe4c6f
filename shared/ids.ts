// Opaque, prefixed, time-sortable ids: `<prefix>_<ULID>` (DESIGN §1). Sortable ids make cursor
// pagination by `after=<id>` a plain comparison.
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export const ID_PREFIXES = [
  'org',
  'usr',
  'key',
  'tok',
  'dom',
  'em',
  'rcp',
  'evt',
  'wh',
  'dlv',
  'ct',
  'top',
  'seg',
  'bc',
  'tpl',
  'sup',
  'inb',
  'aut',
  'run',
  'req',
] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

const ID_RE = /^([a-z]{2,3})_([0-9A-HJKMNP-TV-Z]{26})$/;

/** True when `value` looks like an id with the given prefix (cheap check before a DB look-up). */
export function isId(value: string, prefix: IdPrefix): boolean {
  const m = ID_RE.exec(value);
  return m !== null && m[1] === prefix;
}
