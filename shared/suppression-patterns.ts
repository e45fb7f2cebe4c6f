// Suppression rules (DESIGN §16): `<local>@<domain>` where `*` is the only wildcard.
// - local: the characters of an unquoted address (letters, digits, . ! # $ % & ' + - / = ^ _ ` { | } ~)
//   and `*`, which stands for any run of characters, none included;
// - domain: a name (`example.com`), `*.` and a name (any subdomain of it, not the name itself),
//   or `*` (any domain);
// - at least one `*`, and not `*@*` (that would stop every message: pause sending instead).
// Matching ignores case (addresses are stored lower-cased). Each rule is stored with the key the
// send-time look-up uses (sql/000400_suppression_rules.sql: its domain part, `|`, the first ≤ 3
// literal characters of its local part) and its `like` form.

export interface SuppressionPattern {
  /** The rule as stored and shown: lower case, runs of `*` folded into one. */
  pattern: string;
  /** `<domain part>|<first ≤ 3 literal characters of the local part>`. */
  key: string;
  like: string;
}

export type PatternResult = { ok: true; value: SuppressionPattern } | { ok: false; reason: string };

const LOCAL = /^[a-z0-9.!#$%&'+\-/=^_`{|}~*]+$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** How many literal characters of the local part key a rule (the SQL side agrees: 0…3). */
const PREFIX_LENGTH = 3;

function domainProblem(domain: string): string | null {
  if (domain === '*') return null;
  const name = domain.startsWith('*.') ? domain.slice(2) : domain;
  if (name.length === 0 || name.length > 253 || name.split('.').some((l) => !LABEL.test(l))) {
    return 'its domain must be a domain name, `*.` followed by a domain name, or `*`';
  }
  return null;
}

/** Escapes `like`'s own wildcards, then turns each `*` into `%`. */
function likeOf(pattern: string): string {
  return pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%');
}

/** Reads a rule; the reason says what is wrong in words a caller can act on. */
export function parseSuppressionPattern(input: string): PatternResult {
  const pattern = input.toLowerCase().replace(/\*{2,}/g, '*');
  if (pattern.length < 3 || pattern.length > 320) return { ok: false, reason: 'must be 3 to 320 characters long' };
  if (/[?[\]]/.test(pattern))
    return { ok: false, reason: 'uses a wildcard other than `*` (`?` and `[…]` are not supported)' };
  const at = pattern.indexOf('@');
  if (at <= 0 || at !== pattern.lastIndexOf('@')) {
    return { ok: false, reason: 'must be `<local part>@<domain>` with exactly one `@`, e.g. `*@example.com`' };
  }
  const local = pattern.slice(0, at);
  const domain = pattern.slice(at + 1);
  if (!LOCAL.test(local)) {
    return { ok: false, reason: 'its local part may hold only the characters of an address and `*`' };
  }
  const problem = domainProblem(domain);
  if (problem) return { ok: false, reason: problem };
  if (!pattern.includes('*')) return { ok: false, reason: 'has no `*`: suppress a single address with `email`' };
  if (local === '*' && domain === '*')
    return { ok: false, reason: '`*@*` would stop every message; pause sending instead' };
  const literal = local.slice(0, local.includes('*') ? local.indexOf('*') : local.length);
  return {
    ok: true,
    value: { pattern, key: `${domain}|${literal.slice(0, PREFIX_LENGTH)}`, like: likeOf(pattern) },
  };
}

/** True when the value is meant as a rule rather than an address (it has a `*`). */
export function looksLikePattern(value: string): boolean {
  return value.includes('*');
}
