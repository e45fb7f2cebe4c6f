// What text may come in. Postgres refuses the NUL character in `text` and `jsonb` (the request
// would end in a 500), so every string of a request is checked for it before it is used: JSON
// values and object keys at any depth, query values, path parameters, console form fields, and
// the fields the relay reads from a message. Label-like fields (a message's kind, names, a custom
// event's name) travel further, into webhook payloads, SMTP replies, headers and metric labels,
// so they may hold no control character at all: the schemas give them the `label` format
// (api/validate.ts). Bodies of text (`text`, `html`, a subject) may hold line breaks and tabs.
import { validationError } from '../shared/errors.js';

/** C0 controls and DEL: what a label may not contain. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Deeper than any request schema goes (a segment filter needs about 15); a body nested further is
 * refused, not walked. JSON.parse takes any depth, but JSON.stringify (the Idempotency-Key hash,
 * jsonb parameters) recurses and overflows the stack near 10,000 levels.
 */
export const MAX_DEPTH = 64;

// A UTF-16 surrogate that is not half of a pair: JSON allows it as an escape, Postgres refuses it
// in json and replaces it in text, so a value carrying one would fail or be stored altered.
const LONE_SURROGATE = /\p{Cs}/u;

export function hasControl(s: string): boolean {
  return CONTROL.test(s);
}

export function hasNul(s: string): boolean {
  return s.includes('\u0000');
}

function stringProblem(s: string): string | null {
  if (hasNul(s)) return 'a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'text that is not well-formed Unicode (a lone surrogate)';
  return null;
}

/**
 * Why `value` cannot be stored: the path of its first string (or object key) holding NUL or a
 * lone surrogate, or of nesting deeper than MAX_DEPTH, as a sentence; null when it is fine.
 * `nestingOnly` checks the depth alone (the body reader's check, made before anything hashes the
 * body; the text is checked by the route's validator, so that a batch item's error names it).
 * Walked without recursion.
 */
export function textProblem(value: unknown, where: string, nestingOnly = false): string | null {
  const stack: [unknown, string, number][] = [[value, where, 0]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!;
    if (typeof v === 'string') {
      const bad = nestingOnly ? null : stringProblem(v);
      if (bad) return `${path} must not contain ${bad}`;
    } else if (typeof v === 'object' && v !== null) {
      if (depth >= MAX_DEPTH) return `${path} is nested deeper than ${MAX_DEPTH} levels`;
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}.${i}`, depth + 1]);
      } else {
        const entries = Object.entries(v);
        for (const [key] of nestingOnly ? [] : entries) {
          const bad = stringProblem(key);
          if (bad) return `${path} has a key with ${bad}: ${JSON.stringify(key)}`;
        }
        for (let i = entries.length - 1; i >= 0; i--)
          stack.push([entries[i]![1], `${path}.${entries[i]![0]}`, depth + 1]);
      }
    }
  }
  return null;
}

/**
 * Throws 422 validation_error naming the field when `value` holds NUL anywhere (`where`: `path`
 * for the path parameters, which are percent-decoded, so `%00` is NUL; `query`; `body`).
 */
export function refuseNul(value: unknown, where: string): void {
  const problem = textProblem(value, where);
  if (problem) throw validationError(problem);
}
