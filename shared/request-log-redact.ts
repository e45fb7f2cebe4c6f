// What a request log keeps of a request's and its answer's bodies (DESIGN §21): the JSON as it
// was, with every secret taken out, by field name (tokens, passwords, keys, signing secrets,
// attachment content) and by the look of a value (a Tern token, a webhook secret, a PEM key, a
// DKIM key record), and cut short when it is large. What is removed reads "[redacted]".
const SECRET_FIELD = /token|password|secret|private|api_?key|authorization|^content$/i;
const SECRET_VALUE =
  /(^|[^A-Za-z0-9])(\w+_(live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9+/=]{8,})|-----BEGIN|\bp=[A-Za-z0-9+/]{40,}/;

/** Largest body kept, as JSON text; a larger one is stored as a note of its size. */
export const MAX_LOGGED_BODY = 64 * 1024;
const MAX_DEPTH = 20;

export const REDACTED = '[redacted]';

function walk(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => walk(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] =
      SECRET_FIELD.test(k) && v !== null && v !== undefined && typeof v !== 'boolean' ? REDACTED : walk(v, depth + 1);
  }
  return out;
}

/** The body as the log keeps it: JSON only (anything else is null), redacted, bounded. */
export function loggedBody(body: unknown): unknown {
  if (body === undefined || body === null || Buffer.isBuffer(body) || typeof body !== 'object') return null;
  if (typeof (body as { pipe?: unknown }).pipe === 'function') return null;
  const clean = walk(body, 0);
  const size = JSON.stringify(clean)?.length ?? 0;
  return size > MAX_LOGGED_BODY ? { truncated: true, size } : clean;
}
