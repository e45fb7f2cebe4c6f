// The request log (DESIGN §21): every API request of the organization, as the caller's mode sees
// it (live keys the live requests, test keys the test ones), with its redacted bodies; FULL and
// above, org-wide so closed to domain-restricted keys. Written by api/middleware/request-log.ts.
import { getRequestLog, listRequestLogs, type RequestLogRow } from '../../shared/db/request-logs.js';
import { notFound } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ListLogsQuery } from '../schemas/logs.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { routeQuery } from '../route-schemas.js';

function render(r: RequestLogRow, bodies: boolean) {
  return {
    object: 'log',
    id: r.id,
    request_id: r.request_id,
    method: r.method,
    path: r.path,
    route: r.route,
    query: r.query,
    status: r.status,
    key_id: r.key_id,
    ip: r.ip,
    user_agent: r.user_agent,
    duration_ms: r.duration_ms,
    ...(bodies ? { request_body: r.request_body, response_body: r.response_body } : {}),
    created_at: r.created_at.toISOString(),
  };
}

export const logHandlers: Handlers = {
  'GET /logs': async (ctx) => {
    const auth = ctx.state.auth;
    const { limit, after, before, ...filter } = routeQuery<ListLogsQuery>(ctx);
    const page = { limit, ...(after ? { after } : {}), ...(before ? { before } : {}) };
    const rows = await listRequestLogs(ctx.deps.sql, auth.org.id, auth.key.mode, page, filter);
    ctx.body = listEnvelope(rows, limit, (r) => render(r, false));
  },

  'GET /logs/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const id = ctx.params.id!;
    const row = isId(id, 'log') ? await getRequestLog(ctx.deps.sql, auth.org.id, auth.key.mode, id) : null;
    if (!row) throw notFound('Log');
    ctx.body = render(row, true);
  },
};
