// The root's routes, without an API key: /healthz answers while the process runs (with
// ?verbose=1, the report of api/routes/health-report.ts); /readyz answers 200 only when Postgres
// and Redis both answer within 2 s; /metrics is the Prometheus text (api/prometheus/scrape.ts).
// The verbose report and /metrics are guarded by PROMETHEUS_TOKEN (api/prometheus/guard.ts).
import { ping } from '../../shared/db/pool.js';
import { checkMonitoringAccess } from '../prometheus/guard.js';
import { withTimeout } from '../prometheus/queues.js';
import { CONTENT_TYPE, scrape } from '../prometheus/scrape.js';
import type { Area } from '../router.js';
import type { ApiContext, AppDeps } from '../types.js';
import { healthReport } from './health-report.js';

async function readiness(deps: AppDeps): Promise<Record<string, string>> {
  const [pg, redis] = await Promise.allSettled([
    withTimeout(ping(deps.sql), 2000),
    withTimeout(deps.redis.ping(), 2000),
  ]);
  return {
    postgres: pg.status === 'fulfilled' ? 'ok' : 'unavailable',
    redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable',
  };
}

async function ready(ctx: ApiContext): Promise<void> {
  const checks = await readiness(ctx.deps);
  const ok = Object.values(checks).every((c) => c === 'ok');
  ctx.status = ok ? 200 : 503;
  ctx.body = { status: ok ? 'ok' : 'unavailable', checks };
}

async function health(ctx: ApiContext): Promise<void> {
  const verbose = ctx.query.verbose;
  if (verbose !== '1' && verbose !== 'true') {
    ctx.body = { status: 'ok' };
    return;
  }
  checkMonitoringAccess(ctx);
  const report = await healthReport(ctx.deps);
  ctx.status = report.httpStatus;
  ctx.body = report.body;
}

async function metrics(ctx: ApiContext): Promise<void> {
  checkMonitoringAccess(ctx);
  ctx.body = await scrape(ctx.deps);
  ctx.type = CONTENT_TYPE;
}

/** The root's routes for the one router (api/router.ts). */
export function healthArea(): Area {
  return {
    prefix: '',
    routes: [
      { method: 'GET', path: '/healthz', run: health },
      { method: 'GET', path: '/readyz', run: ready },
      { method: 'GET', path: '/metrics', run: metrics },
    ],
  };
}
