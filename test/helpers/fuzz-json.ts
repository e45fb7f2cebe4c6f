// fast-check arbitraries for hostile JSON: strings of any code point (lone surrogates, control
// characters and NUL included), strings around and far past a schema's maxLength, numbers at the
// edges of a double, values of the wrong type, and nesting far deeper than any schema allows.
// A generated request body is a `FuzzBody`: the exact text sent, printed shortened on failure.
import fc from 'fast-check';

/** One request body: the bytes sent (JSON or not) and a short description for the report. */
export interface FuzzBody {
  text: string;
  what: string;
}

function shorten(s: string): string {
  return s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s;
}

function body(text: string, what: string): FuzzBody {
  return Object.assign({ text, what }, { [fc.toStringMethod]: () => `${what}: ${shorten(text)}` });
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const special = fc.constantFrom('\u0000', '\r', '\n', '\r\n', '\t', '\u2028', '\u202e', '\ufeff', '"', '\\', '<', '@');
const anyCodePoint = fc
  .integer({ min: 0, max: 0x10ffff })
  .map((c) => (c >= 0xd800 && c <= 0xdfff ? 'x' : String.fromCodePoint(c)));
const unit = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: anyCodePoint },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 1, arbitrary: special },
);

/** A short string of any units. */
export const messyString = fc.string({ unit, maxLength: 40 });

/** A string of `n` repetitions of one unit, for n around a limit and far past it. */
export function longString(limits: number[]): fc.Arbitrary<string> {
  const sizes = fc.oneof(
    ...limits.flatMap((n) => [fc.constant(n - 1), fc.constant(n), fc.constant(n + 1)]),
    fc.integer({ min: 0, max: 200_000 }),
  );
  return fc.tuple(sizes, fc.constantFrom('a', 'é', '😀', '\ud800', ' ')).map(([n, c]) => c.repeat(Math.max(0, n)));
}

export const edgeNumber = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e21, 1e308, -1e308, 5e-324, 0.5, 1e-7),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** Any JSON value, with the strings and numbers above, `depth` levels at most. */
export function anyJson(depth = 3): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(messyString, edgeNumber, fc.boolean(), fc.constant(null));
  if (depth === 0) return leaf;
  const inner = anyJson(depth - 1);
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    { weight: 1, arbitrary: fc.array(inner, { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(messyString, inner, { maxKeys: 4 }) },
  );
}

/** A value of the wrong type for almost any field. */
export const wrongType = anyJson(2);

/** A field value: mostly `good`, sometimes anything. */
export function mostly<T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: wrongType });
}

/** `depth` levels of arrays or objects around a scalar, as text (a deep value cannot be stringified). */
export function deepText(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

const depths = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.constantFrom(1_000, 5_000, 20_000, 100_000));

/**
 * Bodies for a route whose well-formed bodies `shaped` produces (an object or array): those
 * bodies, any JSON, a deep value at the top or under a field the route knows, JSON with a number
 * too large for a double or a prototype key, and text that is not JSON at all.
 */
export function fuzzBodies(shaped: fc.Arbitrary<unknown>, fields: string[]): fc.Arbitrary<FuzzBody> {
  const field = fc.constantFrom(...fields);
  const kind = fc.constantFrom('array' as const, 'object' as const);
  return fc.oneof(
    { weight: 12, arbitrary: shaped.map((v) => body(JSON.stringify(v), 'shaped')) },
    { weight: 3, arbitrary: anyJson(4).map((v) => body(JSON.stringify(v), 'any JSON')) },
    {
      weight: 1,
      arbitrary: fc.tuple(depths, kind).map(([d, k]) => body(deepText(d, k), `nested ${d} deep`)),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(shaped, field, depths, kind)
        .map(([v, f, d, k]) => body(withRaw(v, f, deepText(d, k)), `${f} nested ${d} deep`)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          shaped,
          field,
          fc.constantFrom('1e999', '-1e999', '123456789012345678901234567890', '1E+400', '-0.0e-999'),
        )
        .map(([v, f, n]) => body(withRaw(v, f, n), `${f} = ${n}`)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(shaped, fc.constantFrom('__proto__', 'constructor', 'prototype'))
        .map(([v, k]) => body(withRaw(v, k, '{"polluted":true,"to":"x@y.z"}'), `key ${k}`)),
    },
    { weight: 1, arbitrary: fc.string({ unit, maxLength: 60 }).map((t) => body(t, 'not JSON')) },
  );
}

/** The JSON text of `v` (an object; anything else is wrapped) with `key` set to raw JSON text. */
function withRaw(v: unknown, key: string, raw: string): string {
  const target = Array.isArray(v) ? v[0] : v;
  const obj = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  delete (obj as Record<string, unknown>)[key];
  const rest = JSON.stringify(obj).slice(1, -1);
  const text = `{${JSON.stringify(key)}:${raw}${rest ? `,${rest}` : ''}}`;
  return Array.isArray(v) ? `[${text}]` : text;
}
