// One error type for the HTTP boundary with a closed set of codes (STYLE §5). The status comes
// from the table, never from the thrower; 5xx messages are replaced before they leave.

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  forbidden_domain: 403,
  sending_paused: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_conflict: 409,
  idempotency_in_progress: 409,
  invalid_state: 409,
  conflict: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  unknown_domain: 422,
  demo_domain: 422,
  validation_error: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  unavailable: 503,
  outcome_unknown: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly status: number;
  /** Koa convention: only client errors carry their message to the caller. */
  readonly expose: boolean;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
    this.expose = this.status < 500 || code === 'unavailable' || code === 'outcome_unknown';
  }
}

/**
 * 504 outcome_unknown: a write whose connection to Postgres broke, Postgres then unreachable for
 * the whole confirmation window (shared/write-outcome.ts). `ids` are the records the request
 * tried to create, by position (null where it created none): GET them to learn the outcome, or
 * retry with the same Idempotency-Key, which reuses them (api/middleware/idempotency.ts).
 */
export class OutcomeUnknown extends ApiError {
  constructor(
    readonly ids: (string | null)[],
    message: string,
    /** The last failure met while trying to learn the outcome (logged, never answered). */
    cause?: unknown,
  ) {
    super('outcome_unknown', message);
    if (cause !== undefined) this.cause = cause;
  }
}

/** Shorthand for the most common client error: a field that failed validation. */
export function validationError(message: string): ApiError {
  return new ApiError('validation_error', message);
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} not found`);
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01', // admin_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

/**
 * True when an error means a backing service (Postgres or Redis) is unreachable, so the caller
 * should get 503 unavailable instead of 500.
 */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  const msg = err.message;
  return (
    /Stream isn't writeable|enableOfflineQueue|Connection is closed|connect ECONNREFUSED|Command timed out|MaxRetriesPerRequest/i.test(
      msg,
    ) ||
    (err instanceof AggregateError && err.errors.some(isUnavailable))
  );
}

/** Postgres refused a row whose key is already stored (unique_violation, 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
