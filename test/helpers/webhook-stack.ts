// A Tern install for webhook tests: the API, an organization with a domain and its ADMIN key,
// a loopback receiver, and the fan-out and delivery workers with test options.
import type { Worker } from 'bullmq';
import { publishEvents } from '../../shared/events.js';
import { startWebhookDelivery, type WebhookDeliveryOptions } from '../../workers/webhook-delivery.js';
import { startWebhookFanout } from '../../workers/webhook-fanout.js';
import { startReceiver, type Receiver, type Responder } from './receiver.js';
import { track } from './resources.js';
import { seedOrg, type SeededOrg } from './seed.js';
import { startApi, type TestApi } from './stack.js';
import { workerDepsFor } from './workers.js';
import { unthrottle } from './unthrottle.js';

export interface WebhookStack {
  api: TestApi;
  org: SeededOrg;
  receiver: Receiver;
  publish(ids: string[]): Promise<void>;
  createWebhook(body: Record<string, unknown>): Promise<{ id: string; signing_secret: string }>;
  close(): Promise<void>;
}

export async function startWebhookStack(
  opts: {
    delivery?: WebhookDeliveryOptions;
    respond?: Responder;
    env?: Record<string, string>;
    workers?: boolean;
  } = {},
): Promise<WebhookStack> {
  const api = await startApi(opts.env ? { env: opts.env } : {});
  const org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
  // The tests poll the deliveries list; the default per-key rate limit would throttle them.
  await unthrottle(api, org.organization.id);
  const receiver = await startReceiver(opts.respond);
  const deps = workerDepsFor(api, opts.env);
  const workers: Worker[] = [];
  if (opts.workers !== false) {
    workers.push(startWebhookFanout(deps), startWebhookDelivery(deps, { schedule: [150, 300], ...opts.delivery }));
  }
  const closeWorkers = track('webhook workers', async () => {
    await receiver.close();
    await Promise.all(workers.map((w) => w.close()));
  });
  return {
    api,
    org,
    receiver,
    publish: (ids) => publishEvents(api.deps.sql, api.deps.queues, ids),
    async createWebhook(body) {
      const res = await api.request('POST', '/webhooks', { token: org.key.token, body });
      if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${res.text}`);
      return res.json;
    },
    async close() {
      await closeWorkers();
      await deps.close();
      await api.close();
    },
  };
}
