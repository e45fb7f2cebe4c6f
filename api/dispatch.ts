// The API's routes (under /api/v1) for the one router (api/router.ts): a route per row of the
// permission table, each with its chain authorize(rule) → JSON body → idempotency → handler,
// plus the HTTP inbound intake, which takes the install's INBOUND_SECRET instead of an API key,
// and the index and the OpenAPI document (api/openapi/), which take none.
import { ROUTES, routeId } from '../shared/permissions.js';
import { auditTrail } from './middleware/audit.js';
import { authorize } from './middleware/authorize.js';
import { jsonBody } from './middleware/body.js';
import { idempotency } from './middleware/idempotency.js';
import { requestLog } from './middleware/request-log.js';
import { INTAKE_PATH, inboundIntake } from './routes/inbound-intake.js';
import { apiIndexRoute, openApiRoute } from './openapi/serve.js';
import type { Area, Middleware, Route } from './router.js';
import { refuseNul } from './text-checks.js';
import type { Handler, Handlers } from './types.js';

export const API_PREFIX = '/api/v1';

/** A path parameter reaches Postgres as text: NUL in it is a 422, before any look-up. */
const checkParams: Middleware = async (ctx, next) => {
  refuseNul(ctx.params, 'path');
  await next();
};

/**
 * Every row of the permission table with its handler. A row without a handler, or a handler
 * without a row, stops the app from starting.
 */
export function apiArea(handlers: Handlers, defaultBodyLimit: number): Area {
  const unused = new Set(Object.keys(handlers));
  const routes: Route[] = [];
  for (const rule of ROUTES) {
    const id = routeId(rule);
    // An alias (Resend's path) runs the handler of the route it names.
    const handler = handlers[rule.aliasOf ?? id];
    if (!handler) throw new Error(`permission table row "${id}" has no handler`);
    unused.delete(rule.aliasOf ?? id);
    // The request log's own reads are not logged (each would hold the lines it read).
    const run: Middleware[] = rule.path.startsWith('/logs') ? [authorize(rule)] : [requestLog, authorize(rule)];
    if (rule.path.includes(':')) run.push(checkParams);
    // A GET (or HEAD) has no body to read; an upload's handler streams its own.
    if (rule.method !== 'GET' && !rule.upload) run.push(jsonBody(rule.bodyLimit ?? defaultBodyLimit));
    const audit = auditTrail(rule);
    if (audit) run.push(audit);
    if (rule.idempotent) run.push(idempotency());
    // authorize() above set ctx.state.auth, which the handler's type requires.
    run.push((ctx) => handler(ctx as Parameters<Handler>[0]));
    routes.push({ method: rule.method, path: API_PREFIX + rule.path, run });
  }
  if (unused.size > 0) throw new Error(`handlers without a permission table row: ${[...unused].join(', ')}`);
  routes.push({ method: 'POST', path: INTAKE_PATH, run: inboundIntake() });
  // The index and the OpenAPI document of these routes, without a key.
  routes.push(apiIndexRoute(API_PREFIX), openApiRoute(API_PREFIX));
  return { prefix: API_PREFIX, routes };
}
