// Structured logs (pino). Every warn/error line carries a stable `event` code listed in docs/operations.md.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Credentials never reach a log line, at the top level or one level down (`{ token }`,
 * `{ key: { token } }`, `{ req: { headers: { authorization } } }`): API tokens, passwords,
 * webhook signing secrets, DKIM private keys, Authorization headers.
 */
const SECRET_FIELDS = [
  'token',
  'password',
  'secret',
  'secretKey',
  'signing_secret',
  'previous_secret',
  'privateKey',
  'private_key',
  'dkim_private_key',
  'authorization',
];
export const REDACT_PATHS = [
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
  'headers.authorization',
  '*.headers.authorization',
  'req.headers.authorization',
];

export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    base: { process: name, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: REDACT_PATHS,
  };
  return destination ? pino(options, destination) : pino(options);
}
