// Two-stage shutdown (STYLE §10): the first SIGTERM/SIGINT runs the stop steps in order (stop
// intake, wait for work in flight, close connections); a second signal, or the end of
// SHUTDOWN_GRACE_SECONDS, exits at once.
import { loadConfig, type Config } from './config.js';
import type { Logger } from './logger.js';

/** The end of the grace kept for closing connections once the sessions in flight are cut. */
const CLOSE_MARGIN_MS = 2000;

/**
 * How long SMTP sessions in flight may last after the signal before the server cuts them: the
 * grace less a margin (at most a quarter of it) for closing the rest.
 */
export function sessionsCloseMs(config: Pick<Config, 'shutdownGraceSeconds'>): number {
  const grace = config.shutdownGraceSeconds * 1000;
  return grace - Math.min(CLOSE_MARGIN_MS, grace / 4);
}

export function onShutdown(
  logger: Logger,
  config: Pick<Config, 'shutdownGraceSeconds'>,
  stop: () => Promise<void>,
): void {
  const graceMs = config.shutdownGraceSeconds * 1000;
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ event: 'SHUTDOWN_FORCED', signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ event: 'SHUTDOWN_TIMEOUT', graceMs }, 'shutdown took too long: exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ event: 'SHUTDOWN_FAILED', err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** Logs and exits on a start-up failure (bad config, unreachable dependency that is required). */
export function fatal(logger: Logger | null, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  if (logger) logger.fatal({ event: 'STARTUP_FAILED', err }, message);
  else process.stderr.write(`tern: ${message}\n`);
  process.exit(1);
}

/** The process configuration, or exit 1 with a message naming the bad variable. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    fatal(null, err);
  }
}
