// Turns nodemailer's SMTP answers and errors into AttemptResult values via the classifier.
import { classifyConnectionError, classifyReply } from '../classify.js';
import type { AttemptResult, SmtpReply } from './types.js';

const ENHANCED = /^([245]\.\d{1,3}\.\d{1,3})\b\s*/;

/** Parses "550 5.1.1 <a@b>: no such user" (possibly multi-line) into code, enhanced code and text. */
export function parseReply(response: string): SmtpReply | null {
  const lines = response.split(/\r?\n/).filter((l) => l.trim() !== '');
  const first = /^(\d{3})[ -]?(.*)$/.exec(lines[0]?.trim() ?? '');
  if (!first) return null;
  const texts = lines.map((l) => l.trim().replace(/^\d{3}[ -]?/, ''));
  const m = ENHANCED.exec(texts[0]!);
  const enhanced = m ? m[1]! : null;
  const text = texts.map((t) => t.replace(ENHANCED, '')).join(' ');
  return { code: Number(first[1]), enhanced, text };
}

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
    const reply = parseReply(e.response) ?? { code: e.responseCode, enhanced: null, text: e.response };
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
