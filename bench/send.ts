// Sending throughput: the bare Koa floor, then POST /emails (1 recipient, small HTML) and
// POST /emails/batch (100 per request) with a test key, each for a few seconds with autocannon at
// 50 connections. Prints accepted emails/s, p50, p99 and the ratio to the floor. Targets on the
// 2-core machine: POST /emails ≥ 1,000 emails/s with p99 < 50 ms; batch ≥ 10,000 emails/s.
//
// Run: npx tsx bench/send.ts [seconds]  (needs the test Postgres and Redis, as `npm test` does;
// TEST_DATABASE_URL / TEST_REDIS_URL override them). Written without bench/lib, which did not
// exist yet; the servers share this process with autocannon, so figures are a lower bound.
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import Koa from 'koa';
import { seedOrg } from '../test/helpers/seed.js';
import { startApi } from '../test/helpers/stack.js';

const SECONDS = Number(process.argv[2] ?? 10);
const CONNECTIONS = 50;

interface Slice {
  name: string;
  emailsPerRequest: number;
  requestsPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function run(
  name: string,
  url: string,
  emailsPerRequest: number,
  opts: Partial<autocannon.Options> = {},
): Promise<Slice> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, ...opts });
  return {
    name,
    emailsPerRequest,
    requestsPerSec: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

async function floorServer(): Promise<{ url: string; close(): Promise<void> }> {
  const app = new Koa();
  app.use((ctx) => {
    ctx.body = { id: 'em_floor' };
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(() => r())) };
}

async function main(): Promise<void> {
  const floor = await floorServer();
  const api = await startApi();
  try {
    const org = await seedOrg(api.deps.sql, { domains: [{ name: 'bench.test' }] });
    await api.deps.sql`update organizations set rate_limit_per_second = 100000, rate_limit_burst = 100000
      where id = ${org.organization.id}`;
    const key = await org.mint({ permission: 'SEND', mode: 'test' });
    const headers = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' };
    const one = { from: 'Bench <hi@bench.test>', to: 'delivered@example.com', subject: 'Bench', html: '<p>Hi</p>' };

    const slices: Slice[] = [];
    slices.push(await run('floor (bare Koa)', floor.url, 1, { method: 'POST', body: JSON.stringify(one), headers }));
    slices.push(
      await run('POST /emails', `${api.url}/api/v1/emails`, 1, { method: 'POST', body: JSON.stringify(one), headers }),
    );
    const batch = Array.from({ length: 100 }, (_, i) => ({ ...one, to: `delivered+${i}@example.com` }));
    slices.push(
      await run('POST /emails/batch ×100', `${api.url}/api/v1/emails/batch`, 100, {
        method: 'POST',
        body: JSON.stringify(batch),
        headers,
      }),
    );

    const floorRps = slices[0]!.requestsPerSec || 1;
    console.log(`\nsend benchmark: ${CONNECTIONS} connections, ${SECONDS} s per slice`);
    console.log('slice                      emails/s    req/s   p50 ms   p99 ms   vs floor   non-2xx');
    for (const s of slices) {
      const emails = s.requestsPerSec * s.emailsPerRequest;
      console.log(
        `${s.name.padEnd(25)} ${emails.toFixed(0).padStart(9)} ${s.requestsPerSec.toFixed(0).padStart(8)} ` +
          `${String(s.p50).padStart(8)} ${String(s.p99).padStart(8)} ${(s.requestsPerSec / floorRps).toFixed(2).padStart(10)} ` +
          `${String(s.non2xx).padStart(9)}`,
      );
    }
    console.log('targets: POST /emails ≥ 1000 emails/s with p99 < 50 ms; batch ≥ 10000 emails/s');
  } finally {
    await api.close();
    await floor.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
