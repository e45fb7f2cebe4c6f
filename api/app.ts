// Builds the Koa app without listening (tests use app.callback()). API routes come from the
// permission table (api/dispatch.ts): each row gets authorize(rule) → JSON body → its handler.
import Koa from 'koa';
import { apiRoutes } from './dispatch.js';
import { errorMiddleware } from './middleware/errors.js';
import { INTAKE_PATH, inboundIntake } from './routes/inbound-intake.js';
import { allHandlers } from './routes/index.js';
import { trackingRouter } from './routes/tracking.js';
import { consoleMiddleware } from './console/router.js';
import type { ApiCustom, ApiState, AppDeps, Handlers } from './types.js';

export const API_PREFIX = '/api/v1';
const API_PREFIX_SLASH = `${API_PREFIX}/`;

export function createApp(deps: AppDeps, handlers: Handlers = allHandlers): Koa<ApiState, ApiCustom> {
  const app = new Koa<ApiState, ApiCustom>({ proxy: process.env.TRUST_PROXY === 'true' });
  app.context.deps = deps;
  app.silent = true; // errors are rendered and logged by errorMiddleware
  app.use(errorMiddleware());
  const api = apiRoutes(API_PREFIX, handlers, deps.config.bodyLimitBytes);
  const intake = inboundIntake();
  // Tracking links (/t/*) take no API key: the signed token is the credential.
  const tracking = trackingRouter().routes() as unknown as Koa.Middleware<ApiState, ApiCustom>;
  // The console (/console/*) signs people in with a session cookie, never an API key.
  const consolePages = consoleMiddleware();
  const health = healthRoutes();
  // One look at the path picks the part of the app; an API request passes no other middleware.
  app.use((ctx, next) => {
    const path = ctx.path;
    if (path.startsWith(API_PREFIX_SLASH)) return path === INTAKE_PATH ? intake(ctx, next) : api(ctx, next);
    if (path.startsWith('/t/')) return tracking(ctx, next);
    if (path === '/console' || path.startsWith('/console/')) return consolePages(ctx, next);
    return health(ctx, next);
  });
  return app;
}

function healthRoutes(): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    if (ctx.path === '/healthz' && ctx.method === 'GET') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz' && ctx.method === 'GET') {
      const checks = await readiness(ctx.deps);
      const ok = Object.values(checks).every((c) => c === 'ok');
      ctx.status = ok ? 200 : 503;
      ctx.body = { status: ok ? 'ok' : 'unavailable', checks };
      return;
    }
    await next();
  };
}

async function readiness(deps: AppDeps): Promise<Record<string, string>> {
  const timeout = <T>(p: Promise<T>): Promise<T> =>
    Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref())]);
  const [pg, redis] = await Promise.allSettled([timeout(deps.sql`select 1`), timeout(deps.redis.ping())]);
  return {
    postgres: pg.status === 'fulfilled' ? 'ok' : 'unavailable',
    redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable',
  };
}
