// A webhook delivery worker in its own process, for the kill test: configured from the
// environment like the real worker, with a short lock so a killed holder's job comes back fast.
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps } from '../../workers/deps.js';
import { startWebhookDelivery } from '../../workers/webhook-delivery.js';

const config = loadConfig();
const deps = createWorkerDeps(config, createLogger(config.logLevel, 'webhook-child'));
const worker = startWebhookDelivery(deps, { schedule: [200], lockDurationMs: 1500, stalledIntervalMs: 500 });
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker
    .close()
    .then(() => deps.close())
    .then(() => process.exit(0));
});
