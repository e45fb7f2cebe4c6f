// An install whose web process reaches Postgres through a fault proxy (test/helpers/pg-proxy.ts),
// with a delivery worker that reaches it directly and delivers to a local sink: the tests of what
// an answer says was stored break the API's path to Postgres and then count rows and deliveries.
import { randomBytes } from 'node:crypto';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { closeTestDb, createTestDb, type TestDb } from './db.js';
import { giveDkimKey } from './mail-seed.js';
import { startPgProxy, type PgProxy } from './pg-proxy.js';
import { seedOrg, type SeededOrg } from './seed.js';
import { startSink, type Sink } from './smtp-sink.js';
import { startApi, type TestApi } from './stack.js';
import { unthrottle } from './unthrottle.js';
import { workerDepsFor } from './workers.js';
import { waitFor } from './wait.js';

export interface OutcomeStack {
  db: TestDb;
  proxy: PgProxy;
  api: TestApi;
  org: SeededOrg;
  send: { id: string; token: string };
  sink: Sink;
  wdeps: WorkerDeps;
  /** A marker no other statement carries, for a subject. */
  marker(): string;
  /** Messages the sink accepted with this Message-ID's email id. */
  deliveries(emailId: string): number;
  /** Waits until each email was delivered, then checks none was delivered twice. */
  deliveredOnce(emailIds: string[]): Promise<void>;
  close(): Promise<void>;
}

export async function startOutcomeStack(env: Record<string, string> = {}): Promise<OutcomeStack> {
  const db = await createTestDb();
  const target = new URL(db.url);
  const proxy = await startPgProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const api = await startApi({
    db,
    env: { DATABASE_URL: proxy.url(db.name), STORE_CONFIRM_SECONDS: '3', ...env },
  });
  const org = await seedOrg(db.sql, { domains: [{ name: 'acme.test' }] });
  await unthrottle(api, org.organization.id);
  await db.sql`update domains set verified_at = now() - interval '60 days'`;
  await giveDkimKey(db.sql, org.domains['acme.test']!.id);
  const send = await org.mint({ permission: 'SEND' });
  const sink = await startSink();
  const wdeps = workerDepsFor(api, { SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}?tls_verify=false` });
  const worker: DeliveryWorkers = await startDeliveryWorker(wdeps, { sweepEverySeconds: 0 });

  const deliveries = (emailId: string) =>
    sink.received.filter((m) => m.raw.toString('latin1').includes(`Message-ID: <${emailId}@acme.test>`)).length;
  return {
    db,
    proxy,
    api,
    org,
    send,
    sink,
    wdeps,
    marker: () => `MARK${randomBytes(6).toString('hex')}`,
    deliveries,
    async deliveredOnce(emailIds) {
      await waitFor(`${emailIds.length} delivered`, async () => emailIds.every((id) => deliveries(id) > 0), 60_000);
      // A second copy would come from a second job or a second row: give it time to show.
      await new Promise((r) => setTimeout(r, 500));
      const counts = emailIds.map(deliveries);
      if (counts.some((n) => n !== 1)) throw new Error(`delivered more than once: ${JSON.stringify(counts)}`);
    },
    async close() {
      await worker.close();
      await wdeps.close();
      await sink.close();
      await api.close();
      await proxy.close();
      await closeTestDb(db);
    },
  };
}
