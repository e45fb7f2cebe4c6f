// Builds the Koa app without listening (tests use app.callback()): the error middleware, then
// the one router (api/router.ts) with every area of the web process. A route is added in its
// area's registration function; an area is added to the list below.
import Koa from 'koa';
import { consoleArea, faviconArea } from './console/router.js';
import { apiArea } from './dispatch.js';
import { errorMiddleware } from './middleware/errors.js';
import { docsArea } from './openapi/serve.js';
import { createRouter } from './router.js';
import { healthArea } from './routes/health.js';
import { allHandlers } from './routes/index.js';
import { trackingArea } from './routes/tracking.js';
import type { ApiCustom, ApiState, AppDeps, Handlers } from './types.js';

export function createApp(deps: AppDeps, handlers: Handlers = allHandlers): Koa<ApiState, ApiCustom> {
  const app = new Koa<ApiState, ApiCustom>({ proxy: deps.config.trustProxy });
  app.context.deps = deps;
  app.silent = true; // errors are rendered and logged by errorMiddleware
  app.use(errorMiddleware());
  app.use(
    createRouter([
      // API keys (the permission table), and the inbound intake with INBOUND_SECRET.
      apiArea(handlers, deps.config.bodyLimitBytes),
      // Tracking links (/t/*) take no API key: the signed token is the credential.
      trackingArea(),
      // The console (/console/*) signs people in with a session cookie, never an API key.
      consoleArea(),
      // /favicon.ico, the console's icon, asked for by browsers on any page of the host.
      faviconArea(),
      // /healthz, /readyz.
      healthArea(),
      // The API reference page (/docs/api), which renders GET /api/v1/openapi.json.
      docsArea(),
    ]),
  );
  return app;
}
