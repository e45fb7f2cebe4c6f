// Request id, access log, the HTTP metrics (route template, method, status, duration) and the one
// error renderer: every failure leaves as {"error":{"code","message"}} with the status of the
// code's table row. Faults that are not ApiErrors become 500 internal_error (message hidden,
// logged) or, when Postgres or Redis is unreachable, 503 unavailable. A sending route answers 503
// only when nothing was stored, and 504 outcome_unknown when it cannot tell (shared/write-outcome.ts).
import type Koa from 'koa';
import { ApiError, isUnavailable } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import type { ApiCustom, ApiState } from '../types.js';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isUnavailable(err)) return new ApiError('unavailable', 'A backing service is unavailable; retry shortly');
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && status === 405) {
    return new ApiError('method_not_allowed', 'Method not allowed on this route');
  }
  if (typeof status === 'number' && status === 413) {
    return new ApiError('payload_too_large', 'Request body is too large');
  }
  return new ApiError('internal_error', 'Internal server error');
}

/**
 * ctx.state of every request. The child logger is made on first use: most requests log nothing,
 * and a pino child per request is a measurable share of the hot path (bench/api). A class with a
 * getter on its prototype instead of Object.defineProperty on a fresh object per request.
 */
class RequestState implements ApiState {
  route: string | undefined = undefined;
  rule?: ApiState['rule'];
  auth?: ApiState['auth'];
  body?: unknown;
  retryIds?: ApiState['retryIds'];
  private child: Logger | undefined;

  constructor(
    private readonly logger: Logger,
    readonly requestId: string,
  ) {}

  get log(): Logger {
    return (this.child ??= this.logger.child({ requestId: this.requestId }));
  }
}

export function errorMiddleware(): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    const started = performance.now();
    const given = ctx.get('x-request-id');
    const state = new RequestState(ctx.deps.logger, REQUEST_ID.test(given) ? given : newId('req'));
    ctx.state = state;
    ctx.set('x-request-id', state.requestId);
    try {
      await next();
      // 405 with Allow for a known path under another method is thrown by the router (api/router.ts).
      if (ctx.body == null && ctx.status === 404) {
        throw new ApiError('not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const apiErr = toApiError(err);
      if (apiErr.status >= 500) {
        ctx.state.log.error(
          {
            event:
              apiErr.code === 'unavailable'
                ? 'HTTP_DEPENDENCY_UNAVAILABLE'
                : apiErr.code === 'outcome_unknown'
                  ? 'HTTP_OUTCOME_UNKNOWN'
                  : 'HTTP_INTERNAL_ERROR',
            err,
          },
          'request failed',
        );
      }
      ctx.status = apiErr.status;
      for (const [name, value] of Object.entries(apiErr.headers)) ctx.set(name, value);
      if (apiErr.code === 'unavailable') ctx.set('Retry-After', '1');
      ctx.body = { error: { code: apiErr.code, message: apiErr.expose ? apiErr.message : 'Internal server error' } };
    } finally {
      // An answer sent before the request's body has arrived (a refusal by authorization, size or
      // media type) ends the connection: to reuse it, the rest of the body would first have to be
      // read, and a client that stopped sending would hold it open until the keep-alive timeout.
      if (!ctx.req.complete && !ctx.headerSent) ctx.set('Connection', 'close');
      const seconds = (performance.now() - started) / 1000;
      const status = ctx.status;
      // The route's pattern, never the raw path: one series per route, whatever the ids.
      ctx.deps.prom.observe(
        'tern_http_request_duration_seconds',
        [state.route ?? 'unmatched', ctx.method, String(status)],
        seconds,
      );
      if (ctx.deps.logger.isLevelEnabled('debug')) {
        state.log.debug({ method: ctx.method, path: ctx.path, status, ms: seconds * 1000 }, 'request');
      }
    }
  };
}
