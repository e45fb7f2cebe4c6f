// Entry of the `relay` process: SMTP submission with API-key AUTH (DESIGN §10) on RELAY_PORT
// (STARTTLS) and, when RELAY_TLS_PORT is set, implicit TLS. It validates, stores and enqueues;
// the delivery worker sends. It shares the web process's dependencies (pool, key cache with its
// own Redis subscriber so that revocations reach it, rate limiter, queues). On SIGTERM it stops
// accepting connections, lets open sessions finish, then closes Redis and Postgres.
import type { SMTPServer } from 'smtp-server';
import { createLogger } from '../../shared/logger.js';
import { fatal, loadConfigOrExit, onShutdown } from '../../shared/shutdown.js';
import { createDeps } from '../deps.js';
import { createRelayServer } from './relay-server.js';
import { loadRelayTls } from './relay-tls.js';

async function listen(server: SMTPServer, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, 'relay');
  if (config.relayAllowInsecureAuth) {
    logger.warn({ event: 'RELAY_INSECURE_AUTH' }, 'RELAY_ALLOW_INSECURE_AUTH: AUTH accepted without TLS');
  }
  const tls = await loadRelayTls(config, logger).catch((err: unknown) => fatal(logger, err));
  const deps = await createDeps(config, logger);
  const servers = [createRelayServer(deps, tls)];
  if (config.relayTlsPort !== null) servers.push(createRelayServer(deps, { ...tls, secure: true }));
  for (const s of servers) s.on('error', (err) => logger.error({ event: 'RELAY_SERVER_ERROR', err }, 'relay error'));
  try {
    await listen(servers[0]!, config.relayPort);
    if (servers[1]) await listen(servers[1], config.relayTlsPort!);
  } catch (err) {
    fatal(logger, err);
  }
  logger.info({ port: config.relayPort, tlsPort: config.relayTlsPort }, 'relay listening');
  onShutdown(logger, config, async () => {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    await deps.close();
  });
}

main().catch((err: unknown) => fatal(null, err));
