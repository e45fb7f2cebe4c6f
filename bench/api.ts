// bench/api: Tern's GET /api/v1/keys/me with a warm key (key cache, token bucket in Redis,
// router, error middleware) against a bare Koa route answering a small JSON. Target: the
// median ratio of requests/s ≥ 0.6 and Tern's p99 < 10 ms at 50 connections.
import { createOrganization } from '../shared/bootstrap.js';
import { setOrgRateLimit } from '../shared/db/orgs.js';
import { alternate, type MeasureOptions } from './lib/measure.js';
import { startServer, type Child } from './lib/processes.js';
import { createBenchStack } from './lib/stack.js';

export const description = 'GET /api/v1/keys/me (warm key) vs a bare Koa JSON route';

export async function run(measure: MeasureOptions): Promise<void> {
  const stack = await createBenchStack();
  const children: Child[] = [];
  try {
    const org = await createOrganization(stack.sql, 'tern', { name: 'Bench', adminEmail: 'bench@example.test' });
    // High enough that the bucket never refuses: the benchmark measures the checks, not 429s.
    await setOrgRateLimit(stack.sql, org.organization.id, { perSecond: 100000, burst: 100000 });
    const floor = await startServer('bench/servers/floor', {});
    children.push(floor);
    const tern = await startServer('api/http', {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    });
    children.push(tern);
    const headers = { authorization: `Bearer ${org.key.token}` };
    const check = await fetch(`${tern.url}/api/v1/keys/me`, { headers });
    if (check.status !== 200) throw new Error(`bench/api: GET /keys/me answered ${check.status}`);
    console.log(
      `bench/api: ${measure.pairs} pairs of ${measure.sliceSeconds} s slices, ${measure.connections} connections`,
    );
    const s = await alternate(
      { name: 'koa', url: `${floor.url}/floor`, pid: floor.pid },
      { name: 'tern', url: `${tern.url}/api/v1/keys/me`, headers, pid: tern.pid },
      measure,
    );
    const verdict = s.ratio >= 0.6 && s.tern.p99 < 10 ? 'meets' : 'misses';
    console.log(`  target (ratio ≥ 0.6, tern p99 < 10 ms): ${verdict}`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await stack.drop();
  }
}
