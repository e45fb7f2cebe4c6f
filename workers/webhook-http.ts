// One webhook HTTP attempt: POST the stored body with fresh signature headers to the endpoint,
// through a connector that dials only checked addresses (shared/webhooks/ssrf.ts). 5 s total deadline
// (connect, answer and body read), no redirects followed, at most 64 KiB of the answer read.
import { Agent, request, type Dispatcher } from 'undici';
import { guardedConnector, SsrfError, type LookupFn } from '../shared/webhooks/ssrf.js';

export interface HttpAttemptResult {
  statusCode: number | null;
  latencyMs: number;
  /** null on a 2xx; otherwise why the attempt failed (kept short for the deliveries list). */
  error: string | null;
  /** No retry can succeed: the SSRF guard refused the address the endpoint resolves to. */
  permanent: boolean;
  /** The first 1 KiB of the answer body (UTF-8), or null when no answer came. */
  responseBody: string | null;
}

/** How much of an answer body an attempt keeps (the console's delivery log shows it). */
export const KEPT_RESPONSE_BYTES = 1024;

export interface WebhookHttpOptions {
  timeoutMs: number;
  maxResponseBytes: number;
  allowPrivate: boolean;
  lookup: LookupFn;
}

export function createWebhookAgent(opts: WebhookHttpOptions): Agent {
  return new Agent({
    connect: guardedConnector({ lookup: opts.lookup, allowPrivate: opts.allowPrivate, timeoutMs: opts.timeoutMs }),
    // The total deadline (an abort in postWebhook) is what ends an attempt; these are backstops.
    headersTimeout: opts.timeoutMs + 1000,
    bodyTimeout: opts.timeoutMs + 1000,
    keepAliveTimeout: 4000,
  });
}

/** Reads at most `cap` bytes of the answer, then drops the rest (and the connection with it). */
async function readCapped(body: Dispatcher.ResponseData['body'], cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    const room = cap - size;
    chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    size += Math.min(chunk.length, room);
    if (size >= cap) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}

function isSsrf(err: unknown): boolean {
  return err instanceof SsrfError || (err as { cause?: unknown } | null)?.cause instanceof SsrfError;
}

function describeError(err: unknown, timeoutMs: number, timedOut: boolean): string {
  if (err instanceof SsrfError) return `ssrf: ${err.message}`;
  const timeoutCodes = ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'];
  if (timedOut || timeoutCodes.includes((err as { code?: string }).code ?? ''))
    return `timeout: no complete answer within ${timeoutMs} ms`;
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause;
  if (cause instanceof SsrfError) return `ssrf: ${cause.message}`;
  const code = e.code ?? cause?.code;
  const message = cause?.message ?? e.message ?? String(err);
  return `${code ? `${code}: ` : ''}${message}`.slice(0, 500);
}

export async function postWebhook(
  agent: Agent,
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  opts: Pick<WebhookHttpOptions, 'timeoutMs' | 'maxResponseBytes'>,
): Promise<HttpAttemptResult> {
  const started = performance.now();
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  const latency = () => Math.round(performance.now() - started);
  try {
    const res = await request(url, { method: 'POST', body, headers, dispatcher: agent, signal: controller.signal });
    // The status decides; an answer body that stalls or breaks after it does not undo a 2xx.
    const answer = await readCapped(res.body, opts.maxResponseBytes).catch(() => Buffer.alloc(0));
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const snippet = answer.toString('utf8', 0, Math.min(answer.length, 200)).replace(/\s+/g, ' ').trim();
    return {
      statusCode: res.statusCode,
      latencyMs: latency(),
      error: ok ? null : `HTTP ${res.statusCode}${snippet ? `: ${snippet}` : ''}`,
      permanent: false,
      responseBody: answer.toString('utf8', 0, Math.min(answer.length, KEPT_RESPONSE_BYTES)).replace(/\0/g, ''),
    };
  } catch (err) {
    return {
      statusCode: null,
      latencyMs: latency(),
      error: describeError(err, opts.timeoutMs, timedOut),
      permanent: isSsrf(err),
      responseBody: null,
    };
  } finally {
    clearTimeout(timer);
  }
}
