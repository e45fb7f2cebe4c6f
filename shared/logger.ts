// Structured logs (pino). Every warn/error line carries a stable `event` code listed in README.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    base: { process: name, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: ['req.headers.authorization', '*.token', '*.password'],
  });
}
