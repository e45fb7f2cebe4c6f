// What the relay and the MX count for Prometheus (shared/prom/families.ts): each connection, and
// each command refused by Tern's own checks, by reply class and code.
import { replyClass } from '../../shared/prom/labels.js';
import type { PromRecorder } from '../../shared/prom/recorder.js';

export type SmtpServerName = 'relay' | 'mx';

/** Counts a connection (smtp-server's onConnect) and lets it in. */
export function countSession(prom: PromRecorder, server: SmtpServerName) {
  return (_session: unknown, callback: (err?: Error | null) => void): void => {
    prom.inc('tern_smtp_sessions_total', [server]);
    callback();
  };
}

/** Counts a refusal with this reply code (an error carrying `responseCode` ≥ 400). */
export function countRefusal(prom: PromRecorder, server: SmtpServerName, code: number): void {
  if (code >= 400) prom.inc('tern_smtp_refusals_total', [server, replyClass(code), String(code)]);
}

/** A command's callback that counts the refusal it passes on, if any. */
export function counted<A extends unknown[]>(
  prom: PromRecorder,
  server: SmtpServerName,
  callback: (err?: Error | null, ...rest: A) => void,
): (err?: Error | null, ...rest: A) => void {
  return (err, ...rest) => {
    if (err) countRefusal(prom, server, (err as { responseCode?: number }).responseCode ?? 0);
    callback(err, ...rest);
  };
}
