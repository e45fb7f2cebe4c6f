// Entry of the `web` process: the HTTP API (/api/v1), /healthz and /readyz. It validates,
// authorizes and enqueues; workers do the rest. On SIGTERM it stops accepting connections,
// lets requests in flight finish, then closes Redis and Postgres.
import type { Server } from 'node:http';
import { createLogger } from '../shared/logger.js';
import { fatal, loadConfigOrExit, onShutdown } from '../shared/shutdown.js';
import { createApp } from './app.js';
import { createDeps } from './deps.js';
import { createWebServer } from './server.js';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, 'web');
  const deps = await createDeps(config, logger);
  const app = createApp(deps);
  const server: Server = createWebServer(app).listen(config.port);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  }).catch((err: unknown) => fatal(logger, err));
  logger.info({ port: config.port, baseUrl: config.baseUrl }, 'web listening');
  onShutdown(logger, config, async () => {
    // close() waits for every connection, and a keep-alive connection whose request finished
    // after the signal would otherwise linger until keepAliveTimeout (longer than the grace).
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearInterval(sweep);
    await deps.close();
  });
}

main().catch((err: unknown) => fatal(null, err));
