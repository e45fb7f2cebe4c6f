// The request log (DESIGN §21): each authenticated API request of an organization becomes one row
// of request_logs (GET /logs) once its answer has gone out: the row is written on the response's
// `finish`, so a request never waits on it, and a failed write is logged
// (`REQUEST_LOG_WRITE_FAILED`), never answered. Bodies are kept redacted
// (shared/request-log-redact.ts); the log's own routes are not logged.
import { insertRequestLog } from '../../shared/db/request-logs.js';
import { loggedBody } from '../../shared/request-log-redact.js';
import type { Middleware } from '../router.js';
import type { ApiContext } from '../types.js';

const MAX_TEXT = 500;

interface Start {
  at: number;
  /** Read when the request comes in: a socket closed early has no address by `finish`. */
  ip: string | null;
  userAgent: string | null;
}

function write(ctx: ApiContext, start: Start): void {
  const auth = ctx.state.auth;
  if (!auth) return;
  const row = {
    org_id: auth.org.id,
    key_id: auth.key.id,
    mode: auth.key.mode,
    request_id: ctx.state.requestId,
    method: ctx.method,
    path: ctx.path.slice(0, 2000),
    route: ctx.state.route ?? ctx.path.slice(0, 2000),
    query: ctx.querystring.slice(0, 2000),
    status: ctx.status,
    ip: start.ip,
    user_agent: start.userAgent,
    duration_ms: Math.round(performance.now() - start.at),
    request_body: loggedBody(ctx.state.body),
    response_body: loggedBody(ctx.body),
  };
  insertRequestLog(ctx.deps.sql, row).catch((err: unknown) =>
    ctx.state.log.warn({ event: 'REQUEST_LOG_WRITE_FAILED', err }, 'request log line not written'),
  );
}

export const requestLog: Middleware = (ctx, next) => {
  const start: Start = {
    at: performance.now(),
    ip: ctx.ip || null,
    userAgent: ctx.get('user-agent').slice(0, MAX_TEXT) || null,
  };
  ctx.res.once('finish', () => {
    try {
      write(ctx, start);
    } catch (err) {
      ctx.state.log.warn({ event: 'REQUEST_LOG_WRITE_FAILED', err }, 'request log line not written');
    }
  });
  return next() as Promise<void>;
};
