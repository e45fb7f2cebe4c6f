// The API's routes compiled once at start-up. find-my-way (Fastify's radix-tree router) finds the
// route of a request in one walk of the tree, and each route's chain (authorize → JSON body →
// idempotency → handler) is built once. @koa/router tested every route's pattern in turn and
// composed the matched chain again on every request: a fifth of the CPU of a warm-key
// GET /keys/me (bench/api).
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type Koa from 'koa';
import { ApiError } from '../shared/errors.js';
import { ROUTES, routeId } from '../shared/permissions.js';
import { authorize } from './middleware/authorize.js';
import { jsonBody } from './middleware/body.js';
import { idempotency } from './middleware/idempotency.js';
import type { ApiCustom, ApiState, Handlers } from './types.js';

type Middleware = Koa.Middleware<ApiState, ApiCustom>;

/** Runs `mws` in order, each one's `next` calling the one after it, the last one's the caller's. */
function chain(mws: Middleware[]): Middleware {
  return mws.reduceRight((inner, mw) => (ctx, next) => mw(ctx, () => inner(ctx, next)));
}

interface Route {
  run: Middleware;
}

/**
 * One middleware serving every row of the permission table under `prefix`. A path that exists
 * under other methods answers 405 with `Allow` (OPTIONS: 200 with `Allow`); other paths fall
 * through to `next` (and so to 404).
 */
export function apiRoutes(prefix: string, handlers: Handlers, defaultBodyLimit: number): Middleware {
  const router = FindMyWay({ ignoreTrailingSlash: true, caseSensitive: true, maxParamLength: 500 });
  const unused = new Set(Object.keys(handlers));
  const methods = new Set<HTTPMethod>();
  for (const rule of ROUTES) {
    const id = routeId(rule);
    const handler = handlers[id];
    if (!handler) throw new Error(`permission table row "${id}" has no handler`);
    unused.delete(id);
    const mws: Middleware[] = [authorize(rule)];
    // A GET (or HEAD) has no body to read.
    if (rule.method !== 'GET') mws.push(jsonBody(rule.bodyLimit ?? defaultBodyLimit));
    if (rule.idempotent) mws.push(idempotency());
    mws.push(handler as never);
    const route: Route = { run: chain(mws) };
    const on: HTTPMethod[] = rule.method === 'GET' ? ['GET', 'HEAD'] : [rule.method as HTTPMethod];
    for (const m of on) methods.add(m);
    router.on(on, prefix + rule.path, () => undefined, route);
  }
  if (unused.size > 0) throw new Error(`handlers without a permission table row: ${[...unused].join(', ')}`);

  const allowed = (path: string): HTTPMethod[] => [...methods].filter((m) => router.find(m, path) !== null);

  // Not async: the route's chain's own promise is passed up as it is.
  return (ctx, next) => {
    const path = ctx.path;
    const found = methods.has(ctx.method as HTTPMethod) ? router.find(ctx.method as HTTPMethod, path) : null;
    if (found) {
      (ctx as unknown as { params: Record<string, string | undefined> }).params = found.params;
      return (found.store as Route).run(ctx, next);
    }
    const allow = allowed(path);
    if (allow.length === 0) return next();
    const header = [...allow, 'OPTIONS'].join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Allow', header);
      ctx.status = 200;
      ctx.body = '';
      return Promise.resolve();
    }
    throw new ApiError('method_not_allowed', `${ctx.method} is not allowed on ${path}`, { Allow: header });
  };
}
