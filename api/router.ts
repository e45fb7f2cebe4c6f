// The web process's one router: every route (the API under /api/v1, tracking links under /t,
// the console under /console, health checks and whatever else the root serves) is a row of one
// find-my-way radix tree, found in one walk of it. Each route's middleware chain (its area's
// wrapper, then the route's own steps) is composed once, at start-up. Routes come in areas, one
// registration function per area (api/dispatch.ts, api/routes/tracking.ts, api/console/router.ts,
// api/routes/health.ts); api/app.ts lists them.
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type Koa from 'koa';
import { ApiError } from '../shared/errors.js';
import { MAX_HEADER_BYTES } from './server.js';
import type { ApiCustom, ApiState } from './types.js';

export type Middleware = Koa.Middleware<ApiState, ApiCustom>;
export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Route {
  /** A GET route answers HEAD too. */
  method: RouteMethod;
  /** Full path, `:name` for a parameter (ctx.params.name, percent-decoded). */
  path: string;
  /** The route's own steps, run in order. */
  run: Middleware | Middleware[];
}

export interface Area {
  /** Paths this area owns: `prefix` itself and everything under `prefix/` ('' for the root). */
  prefix: string;
  routes: Route[];
  /**
   * Wrapped around every route of the area and around its misses (an unknown path or method),
   * e.g. the console's security headers and its errors rendered as pages. Without it a miss is
   * rendered as the API's JSON error by api/middleware/errors.ts.
   */
  around?: Middleware;
}

/**
 * Runs `mws` in order, each one's `next` calling the one after it, the last one's the caller's.
 * (Koa types a middleware's result and `next()` as `any`; each is the promise of the rest.)
 */
export function chain(mws: Middleware[]): Middleware {
  return mws.reduceRight(
    (inner, mw) => (ctx, next) => mw(ctx, () => inner(ctx, next) as Promise<void>) as Promise<void>,
  );
}

interface Store {
  run: Middleware;
  /** The route's path pattern (`/api/v1/emails/:id`): the metrics' `route` label, never the raw path. */
  path: string;
}

/**
 * One middleware serving every route of `areas`. A path that exists under other methods answers
 * 405 with `Allow` (OPTIONS: 200 with `Allow`); any other path answers 404 `not_found`. Both go
 * through the area's `around`. One trailing slash is ignored.
 */
export function createRouter(areas: Area[]): Middleware {
  // A parameter may be as long as the request line allows (a click token carries its link).
  const router = FindMyWay({ ignoreTrailingSlash: true, caseSensitive: true, maxParamLength: MAX_HEADER_BYTES });
  const methods = new Set<HTTPMethod>();
  for (const area of areas) {
    for (const route of area.routes) {
      if (route.path !== area.prefix && !route.path.startsWith(`${area.prefix}/`)) {
        throw new Error(`route ${route.method} ${route.path} is outside its area ${area.prefix || '/'}`);
      }
      const own = Array.isArray(route.run) ? route.run : [route.run];
      const store: Store = { run: chain(area.around ? [area.around, ...own] : own), path: route.path };
      const on: HTTPMethod[] = route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
      for (const m of on) methods.add(m);
      router.on(on, route.path, () => undefined, store);
    }
  }
  // Longest prefix first: a miss belongs to the most specific area.
  const owners = [...areas].sort((a, b) => b.prefix.length - a.prefix.length);
  const misses = new Map(owners.map((a) => [a, a.around ? chain([a.around, miss]) : miss]));
  const allowed = (path: string): HTTPMethod[] => [...methods].filter((m) => router.find(m, path) !== null);

  async function miss(ctx: Koa.ParameterizedContext<ApiState, ApiCustom>): Promise<void> {
    const allow = allowed(ctx.path);
    if (allow.length === 0) throw new ApiError('not_found', `No route for ${ctx.method} ${ctx.path}`);
    const header = [...allow, 'OPTIONS'].join(', ');
    if (ctx.method !== 'OPTIONS') {
      throw new ApiError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`, { Allow: header });
    }
    ctx.set('Allow', header);
    ctx.status = 200;
    ctx.body = '';
  }

  // Not async: the route's chain's own promise is passed up as it is.
  return (ctx, next) => {
    const path = ctx.path;
    const found = methods.has(ctx.method as HTTPMethod) ? router.find(ctx.method as HTTPMethod, path) : null;
    if (found) {
      const store = found.store as Store;
      ctx.params = found.params as ApiCustom['params'];
      ctx.state.route = store.path;
      return store.run(ctx, next) as Promise<void>;
    }
    const area = owners.find((a) => a.prefix === '' || path === a.prefix || path.startsWith(`${a.prefix}/`));
    return (area ? misses.get(area)!(ctx, next) : next()) as Promise<void>;
  };
}
