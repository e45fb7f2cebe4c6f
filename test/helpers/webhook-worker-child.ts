// A webhook delivery worker in its own process, for the kill tests: configured from the
// environment like the real worker, with a short lock so a killed holder's job comes back fast,
// or with the worker's own lock settings when WEBHOOK_CHILD_LOCKS=production.
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';

const config = loadConfig();
const deps = createWorkerDeps(config, createLogger(config.logLevel, 'webhook-child'));
const locks = process.env.WEBHOOK_CHILD_LOCKS === 'production' ? {} : { lockDurationMs: 1500, stalledIntervalMs: 500 };
const worker = startWebhookDelivery(deps, { schedule: [200], ...locks });
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker
    .close()
    .then(() => deps.close())
    .then(() => process.exit(0));
});
