// Opaque, prefixed, time-sortable ids: `<prefix>_<ULID>` (DESIGN §1). Sortable ids make cursor
// pagination by `after=<id>` a plain comparison.
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

// ulid's own generator asks the CSPRNG for one byte per character (16 calls per id, a few % of
// a request's CPU under load); the same CSPRNG bytes drawn 4 KiB at a time cost next to nothing.
const pool = Buffer.alloc(4096);
let next = pool.length;
function randomFraction(): number {
  if (next >= pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  // ulid maps [0, 1) onto 32 characters: byte / 256 gives each exactly 8 of the 256 bytes.
  return pool[next++]! / 256;
}

const ulid = monotonicFactory(randomFraction);

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
  'att',
  'dmr',
  'aut',
  'run',
  'imp',
  'exp',
  'req',
  'log',
  'ipp',
  'aud',
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
