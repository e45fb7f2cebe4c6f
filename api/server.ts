// The HTTP server of the web process around the Koa app (api/app.ts). Node's parser answers a
// few requests before Koa sees them: a request line or headers over the size limit, bytes that
// are not HTTP, a request that did not arrive in time. Its own answers carry no body in the API's
// shape and are followed by an immediate destroy, which a client still sending (a 100 KB URL)
// sees as a connection reset rather than the answer. Here they are the API's JSON errors with
// `Connection: close`, and the socket lingers, reading and dropping what the client still sends,
// until the client closes or LINGER_MS pass: the client reads the answer, then a clean close.
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_STATUS, type ErrorCode } from '../shared/errors.js';

/** Request line plus headers, in bytes (Node's default, stated here so that the docs can say it). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Longer than the idle timeout of common load balancers (60 s), so that they close first. */
export const KEEP_ALIVE_MS = 65_000;
/** How long a refused connection keeps reading before it is dropped. */
const LINGER_MS = 5_000;

const METHOD = /^[A-Z]{3,10} /;

/** The answer to a parser error: which request part was too long, or what else went wrong. */
export function parserRefusal(err: { code?: string; rawPacket?: unknown }): [ErrorCode, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // The packet that crossed the limit: when it opens with a request line that fills most of
    // the limit on its own (or never ends), the URL is what is too long.
    const raw = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1') : '';
    const eol = raw.indexOf('\n');
    const firstLine = eol === -1 ? raw.length : eol;
    if (METHOD.test(raw) && (eol === -1 || firstLine > MAX_HEADER_BYTES / 2)) {
      return ['uri_too_long', `The request line is longer than ${MAX_HEADER_BYTES} bytes`];
    }
    return ['headers_too_large', `The request line and headers are larger than ${MAX_HEADER_BYTES} bytes`];
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return ['request_timeout', 'The request did not arrive completely in time'];
  }
  return ['bad_request', `The request could not be parsed as HTTP${err.code ? ` (${err.code})` : ''}`];
}

const refused = new WeakSet<Socket>();

/** Writes the refusal once (the parser reports every later packet again), then lingers. */
function onClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (refused.has(socket)) return;
  refused.add(socket);
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [code, message] = parserRefusal(err);
  const status = ERROR_STATUS[code];
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
}

/** The web process's server for `app` (not yet listening). */
export function createWebServer(app: { callback(): RequestListener }): Server {
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app.callback());
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.on('clientError', onClientError);
  return server;
}
