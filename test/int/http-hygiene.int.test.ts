// The web server at the edges of HTTP, through real sockets: refusals sent before the body was
// read close the connection at once; the body's media type is read case-insensitively and a body
// must say it is JSON; request lines and headers over the parser's limit get an answer in the
// API's shape, never a connection reset.
import { expect } from 'chai';
import { connect } from 'node:net';
import { MAX_HEADER_BYTES } from '../../api/server.js';
import { clickUrl } from '../../shared/tracking.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { insertTrackedMessage } from '../helpers/tracking-rows.js';
import { unthrottle } from '../helpers/unthrottle.js';

interface Exchange {
  /** Everything the server sent. */
  received: string;
  /** How the connection ended: the server's FIN, a reset, or still open at the deadline. */
  ended: 'fin' | 'reset' | 'open';
}

/** True once `received` holds a whole answer with a Content-Length. */
function answered(received: string): boolean {
  const end = received.indexOf('\r\n\r\n');
  const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end));
  return end !== -1 && length !== null && received.length >= end + 4 + Number(length[1]);
}

/**
 * Writes `parts` to a fresh connection (stopping when the server closes), then waits for the
 * server to end it, at most `deadlineMs` (well under the web server's 65 s keep-alive). With
 * `keepAlive`, the answer itself is enough: the connection is reported `open`.
 */
function exchange(port: number, parts: (string | Buffer)[], deadlineMs = 20_000, keepAlive = false): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let done = false;
    const finish = (ended: Exchange['ended']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ received, ended });
    };
    const timer = setTimeout(() => finish('open'), deadlineMs);
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (keepAlive && answered(received)) finish('open');
    });
    socket.on('end', () => finish('fin'));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      // A write after the server's close may fail with EPIPE; what counts is how the read side ended.
      if (e.code === 'ECONNRESET') finish('reset');
    });
    void (async () => {
      for (const p of parts) {
        if (socket.destroyed || socket.writableEnded) return;
        if (!socket.write(p)) await new Promise((r) => socket.once('drain', r).once('close', r));
      }
    })();
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- error bodies, read as the tests need
function parse(received: string): { status: number; headers: Record<string, string>; json: any } {
  const [head = '', body = ''] = received.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, json };
}

describe('HTTP hygiene', () => {
  let api: TestApi;
  let org: SeededOrg;
  let port: number;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    port = Number(new URL(api.url).port);
  });
  after(async () => api.close());

  const head = (type: string | null, extra = '') =>
    `POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.key.token}\r\n` +
    `${type === null ? '' : `Content-Type: ${type}\r\n`}${extra}`;

  describe('early refusals close the connection', () => {
    const chunk = `${(64 * 1024).toString(16)}\r\n${'x'.repeat(64 * 1024)}\r\n`;

    it('answers 413 on a chunked body with Connection: close, then ends the connection', async () => {
      const count = Math.ceil(api.config.bodyLimitBytes / (64 * 1024)) + 4;
      // The client stops after the body's chunks, as one does that waits for the answer.
      const r = await exchange(port, [
        head('application/json', 'Transfer-Encoding: chunked\r\n\r\n'),
        ...Array(count).fill(chunk),
      ]);
      const res = parse(r.received);
      expect(res.status).to.equal(413);
      expect(res.json.error.code).to.equal('payload_too_large');
      expect(res.headers.connection).to.equal('close');
      expect(r.ended).to.equal('fin');
    });

    it('answers 413 on a declared Content-Length with Connection: close, without reading the body', async () => {
      const big = api.config.bodyLimitBytes + 1;
      const r = await exchange(port, [head('application/json', `Content-Length: ${big}\r\n\r\n`), '{"name":']);
      const res = parse(r.received);
      expect(res.status).to.equal(413);
      expect(res.headers.connection).to.equal('close');
      expect(r.ended).to.equal('fin');
    });

    it('closes after a refusal by authorization that comes before the body', async () => {
      const r = await exchange(port, [
        'POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n' +
          'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":',
      ]);
      const res = parse(r.received);
      expect(res.status).to.equal(401);
      expect(res.json.error.code).to.equal('unauthorized');
      expect(res.headers.connection).to.equal('close');
      expect(r.ended).to.equal('fin');
    });

    it('keeps the connection after an answer whose request was read whole', async () => {
      const body = '{"name":"kept"}';
      const r = await exchange(
        port,
        [`${head('application/json', `Content-Length: ${body.length}\r\n\r\n`)}${body}`],
        20_000,
        true,
      );
      expect(parse(r.received).status).to.equal(201);
      expect(parse(r.received).headers.connection).to.equal('keep-alive');
      expect(r.ended).to.equal('open');
    });
  });

  describe('media types', () => {
    const post = (type: string | null, body = '{"name":"media"}') =>
      exchange(port, [`${head(type, `Content-Length: ${body.length}\r\n\r\n`)}${body}`], 20_000, true);

    it('accepts JSON media types in any case, with parameters', async () => {
      for (const type of [
        'application/json',
        'Application/JSON',
        'APPLICATION/JSON',
        'application/json; charset=utf-8',
        ' application/json ;charset=UTF-8',
        'application/merge-patch+json',
      ]) {
        const res = parse((await post(type)).received);
        expect(res.status, type).to.equal(201);
      }
    });

    it('answers 415 to a body without Content-Type, or with another one', async () => {
      for (const type of [null, 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'text/json']) {
        const res = parse((await post(type)).received);
        expect(res.status, String(type)).to.equal(415);
        expect(res.json.error.code).to.equal('unsupported_media_type');
        expect(res.json.error.message).to.contain(type === null ? 'got none' : JSON.stringify(type.toLowerCase()));
      }
    });

    it('takes a bodiless POST without Content-Type', async () => {
      const r = await exchange(
        port,
        [
          `POST /api/v1/emails/em_none/cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.key.token}\r\nContent-Length: 0\r\n\r\n`,
        ],
        20_000,
        true,
      );
      // Past the body step to the handler, which finds no such email.
      expect(parse(r.received).json.error.code).to.equal('not_found');
    });
  });

  describe('request lines and headers over the limit', () => {
    it('answers a 100 KB tracking token with 414 uri_too_long, then a clean close', async () => {
      const r = await exchange(port, [`GET /t/o/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`]);
      const res = parse(r.received);
      expect(res.status).to.equal(414);
      expect(res.json).to.deep.equal({
        error: { code: 'uri_too_long', message: `The request line is longer than ${MAX_HEADER_BYTES} bytes` },
      });
      expect(res.headers.connection).to.equal('close');
      expect(r.ended).to.equal('fin');
    });

    it('gives fetch the 414 as an answer, not a connection error', async () => {
      const res = await fetch(`${api.url}/t/c/${'a'.repeat(100_000)}`, { redirect: 'manual' });
      expect(res.status).to.equal(414);
      expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('uri_too_long');
    });

    it('answers headers over the limit with 431 headers_too_large', async () => {
      const r = await exchange(port, [
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(MAX_HEADER_BYTES)}\r\n\r\n`,
      ]);
      const res = parse(r.received);
      expect(res.status).to.equal(431);
      expect(res.json.error.code).to.equal('headers_too_large');
      expect(r.ended).to.equal('fin');
    });

    it('answers bytes that are not HTTP with 400 bad_request in the API shape', async () => {
      const r = await exchange(port, ['HELLO THERE\r\n\r\n']);
      const res = parse(r.received);
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('bad_request');
      expect(r.ended).to.equal('fin');
    });

    it('serves a click on a link long enough to make a 4 KB token', async () => {
      const m = await insertTrackedMessage(api.deps.sql, {
        orgId: org.organization.id,
        domainId: org.domains['acme.test']!.id,
        domainName: 'acme.test',
        recipient: 'reader@example.com',
      });
      const dest = `https://example.com/path?q=${'z'.repeat(3000)}`;
      const url = clickUrl({
        baseUrl: api.url,
        secret: api.config.secretKey,
        emailId: m.emailId,
        recipientId: m.recipientId,
        url: dest,
      });
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal(dest);
    });
  });
});
