// A whole Tern install on loopback for the end-to-end tests: the HTTP API, a local DNS server,
// a scripted receiving MX (smtp-server sink) for the recipients' domains, Tern's own inbound MX,
// and every worker (delivery, webhook fan-out and delivery, metrics rollup, inbound) started
// through their exported start functions on one WorkerDeps, with short retry schedules.
import type { Worker } from 'bullmq';
import type { AddressInfo } from 'node:net';
import { Resolver } from 'node:dns/promises';
import { createMxServer } from '../../api/smtp/mx-server.js';
import { createLogger } from '../../shared/logger.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { startMetricsWorker } from '../../workers/metrics.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';
import { startWebhookFanout } from '../../workers/webhook-fanout.js';
import { startDns, type TestDns } from './dns.js';
import { track } from './resources.js';
import { RawSmtp } from './smtp-raw.js';
import { startSink, type Script, type Sink } from './smtp-sink.js';
import { seedOrg, type SeededOrg } from './seed.js';
import { startApi, type TestApi, type TestResponse } from './stack.js';
import { workerDepsFor } from './workers.js';
import { unthrottle } from './unthrottle.js';

export const MX_HOST = 'mx.tern.test';

export interface E2eStack {
  api: TestApi;
  dns: TestDns;
  sink: Sink;
  org: SeededOrg;
  deps: WorkerDeps;
  /** Port of Tern's own inbound MX. */
  mxPort: number;
  /** `request` with the organization's ADMIN key, failing on an unexpected status. */
  admin(method: string, path: string, body?: unknown, expectStatus?: number): Promise<TestResponse>;
  /** Adds a domain through the API, publishes the records it returned, verifies it through the API. */
  addDomain(name: string): Promise<{ id: string; dkimPublic: string }>;
  /** Points a recipient domain's MX at the scripted sink. */
  recipientDomain(name: string): void;
  /** One SMTP session with Tern's MX; returns the reply to the message. */
  mailToMx(mailFrom: string, rcpt: string, message: string): Promise<{ code: number; text: string }>;
  /** A resolver on the test DNS server (what a receiver's DKIM verifier would ask). */
  resolver: Resolver;
  close(): Promise<void>;
}

export async function startE2e(
  script: Script,
  opts: { workers?: { metrics?: boolean }; apiEnv?: Record<string, string> } = {},
): Promise<E2eStack> {
  const dns = await startDns();
  const sink = await startSink(script);
  const env = { DNS_SERVERS: dns.server, MX_HOST };
  const api = await startApi({ env: { ...env, ...opts.apiEnv } });
  const org = await seedOrg(api.deps.sql);
  await unthrottle(api, org.organization.id);
  const deps = workerDepsFor(api, {
    ...env,
    OUTBOUND_PORT: String(sink.port),
    DELIVERY_RETRY_SECONDS: '0.3',
    HELO_NAME: 'mta.tern.test',
  });
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'mx-test');
  const mx = createMxServer(
    { config: deps.config, sql: deps.sql, queues: deps.queues, logger, prom: deps.prom },
    { maxBytes: 1 << 20 },
  );
  await new Promise<void>((resolve) => mx.listen(0, '127.0.0.1', resolve));
  const mxPort = (mx.server.address() as AddressInfo).port;
  const workers: (Worker | DeliveryWorkers)[] = [
    await startDeliveryWorker(deps, { sweepEverySeconds: 0 }),
    startWebhookFanout(deps),
    startWebhookDelivery(deps, { schedule: [200, 400], sweepIntervalMs: 60_000 }),
    startInboundWorker(deps),
  ];
  if (opts.workers?.metrics !== false) workers.push(startMetricsWorker(deps));
  const closeWorkers = track('e2e workers and MX', async () => {
    await new Promise<void>((resolve) => mx.close(() => resolve()));
    await Promise.all(workers.map((w) => w.close()));
  });
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([dns.server]);

  async function admin(method: string, path: string, body?: unknown, expectStatus?: number) {
    const res = await api.request(method, path, { token: org.key.token, body });
    if (expectStatus !== undefined && res.status !== expectStatus) {
      throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    }
    return res;
  }

  return {
    api,
    dns,
    sink,
    org,
    deps,
    mxPort,
    resolver,
    admin,
    async addDomain(name) {
      const created = (await admin('POST', '/domains', { name }, 201)).json;
      const txt = new Map<string, string[]>();
      for (const r of created.records as { type: string; name: string; value: string; priority?: number }[]) {
        if (r.type === 'TXT') txt.set(r.name, [...(txt.get(r.name) ?? []), r.value]);
        else dns.mx(r.name, [{ exchange: r.value, priority: r.priority ?? 10 }]);
      }
      for (const [n, values] of txt) dns.txt(n, values);
      const verified = (await admin('POST', `/domains/${created.id}/verify`, undefined, 200)).json;
      if (verified.status !== 'verified') throw new Error(`domain ${name} not verified: ${JSON.stringify(verified)}`);
      const dkim = (created.records as { record: string; value: string }[]).find((r) => r.record === 'DKIM')!;
      return { id: created.id as string, dkimPublic: /p=([^;\s]+)/.exec(dkim.value)![1]! };
    },
    recipientDomain(name) {
      // An IP literal exchange: the sink listens on 127.0.0.1 at OUTBOUND_PORT.
      dns.mx(name, [{ exchange: '127.0.0.1', priority: 10 }]);
    },
    async mailToMx(mailFrom, rcpt, message) {
      const { client } = await RawSmtp.open(mxPort);
      try {
        await client.cmd('EHLO sender.example');
        const from = await client.cmd(`MAIL FROM:<${mailFrom}>`);
        if (from.code !== 250) return from;
        const to = await client.cmd(`RCPT TO:<${rcpt}>`);
        if (to.code !== 250) return to;
        return await client.data(message);
      } finally {
        await client.close();
      }
    },
    async close() {
      await closeWorkers();
      await deps.close();
      await sink.close();
      await api.close();
      await dns.close();
    },
  };
}
