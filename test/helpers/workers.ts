// Worker-side dependencies for a test, sharing a TestApi's database and Redis prefix, so that a
// test can drive the API and run the queue consumers of the same install.
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { createWorkerDeps, type WorkerDeps } from '../../workers/deps.js';
import { track } from './resources.js';
import type { TestApi } from './stack.js';

export function workerDepsFor(api: TestApi, env: Record<string, string> = {}): WorkerDeps {
  const config = loadConfig({
    DATABASE_URL: api.db.url,
    REDIS_URL: api.config.redisUrl,
    REDIS_PREFIX: api.config.redisPrefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    BASE_URL: api.url,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    SECRET_KEY: api.config.secretKey,
    ...env,
  });
  const deps = createWorkerDeps(config, createLogger(config.logLevel, 'worker-test'));
  const close = track('worker deps', () => deps.close());
  return { ...deps, close };
}
