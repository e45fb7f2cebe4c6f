// Turns nodemailer's SMTP answers and errors into AttemptResult values via the classifier.
import { classifyConnectionError, classifyReply, parseReply } from '../classify.js';
import type { AttemptResult, SmtpReply } from './types.js';

export { parseReply };

export function oneLine(reply: SmtpReply): string {
  return `${reply.code}${reply.enhanced ? ` ${reply.enhanced}` : ''} ${reply.text}`.slice(0, 1000);
}

export function fromReply(reply: SmtpReply, host: string | null): AttemptResult {
  if (reply.code >= 200 && reply.code < 300) {
    return {
      kind: 'delivered',
      reply,
      classification: { outcome: 'delivered', detail: '', blocked: false, throttle: false },
      response: oneLine(reply),
      host,
    };
  }
  const classification = classifyReply(reply);
  return { kind: classification.outcome, reply, classification, response: oneLine(reply), host };
}

interface SmtpError {
  message?: string;
  code?: string;
  responseCode?: number;
  response?: string;
}

/** A failed SMTP step: a server reply when there was one, else a connection failure (deferred). */
export function fromError(err: unknown, host: string | null): AttemptResult {
  const e = (err ?? {}) as SmtpError;
  if (typeof e.responseCode === 'number' && e.response) {
    const parsed = parseReply(e.response);
    const reply = parsed.code !== 0 ? parsed : { code: e.responseCode, enhanced: null, text: e.response };
    return fromReply(reply, host);
  }
  return connectionFailure(err, host);
}

export function connectionFailure(err: unknown, host: string | null): AttemptResult {
  const classification = classifyConnectionError(err);
  const e = (err ?? {}) as SmtpError;
  const what = `${e.code ?? 'ERROR'} ${e.message ?? String(err)}`;
  return {
    kind: classification.outcome,
    reply: null,
    classification,
    response: `${host ? `${host}: ` : ''}${what}`.slice(0, 1000),
    host,
  };
}
