// Builds the Koa app without listening (tests use app.callback()). Routes come from the
// permission table: each row gets authorize(rule) → JSON body → its handler.
import Router from '@koa/router';
import Koa from 'koa';
import { ROUTES, routeId } from '../shared/permissions.js';
import { errorMiddleware } from './middleware/errors.js';
import { authorize } from './middleware/authorize.js';
import { jsonBody } from './middleware/body.js';
import { idempotency } from './middleware/idempotency.js';
import { inboundIntake } from './routes/inbound-intake.js';
import { allHandlers } from './routes/index.js';
import { trackingRouter } from './routes/tracking.js';
import { consoleMiddleware } from './console/router.js';
import type { ApiCustom, ApiState, AppDeps, Handlers } from './types.js';

export const API_PREFIX = '/api/v1';

export function buildApiRouter(handlers: Handlers, defaultBodyLimit: number): Router<ApiState, ApiCustom> {
  const router = new Router<ApiState, ApiCustom>({ prefix: API_PREFIX });
  const unused = new Set(Object.keys(handlers));
  for (const rule of ROUTES) {
    const id = routeId(rule);
    const handler = handlers[id];
    if (!handler) throw new Error(`permission table row "${id}" has no handler`);
    unused.delete(id);
    const chain = [authorize(rule), jsonBody(rule.bodyLimit ?? defaultBodyLimit)];
    if (rule.idempotent) chain.push(idempotency());
    router.register(rule.path, [rule.method], [...chain, handler as never]);
  }
  if (unused.size > 0) throw new Error(`handlers without a permission table row: ${[...unused].join(', ')}`);
  return router;
}

export function createApp(deps: AppDeps, handlers: Handlers = allHandlers): Koa<ApiState, ApiCustom> {
  const app = new Koa<ApiState, ApiCustom>({ proxy: process.env.TRUST_PROXY === 'true' });
  app.context.deps = deps;
  app.silent = true; // errors are rendered and logged by errorMiddleware
  app.use(errorMiddleware());
  app.use(healthRoutes());
  // Tracking links (/t/*) take no API key: the signed token is the credential.
  app.use(trackingRouter().routes());
  // The console (/console/*) signs people in with a session cookie, never an API key.
  app.use(consoleMiddleware());
  app.use(inboundIntake());
  const api = buildApiRouter(handlers, deps.config.bodyLimitBytes);
  app.use(api.routes());
  // Not the throwing mode: that one drops the Allow header; errorMiddleware renders the 405/501.
  app.use(api.allowedMethods());
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
