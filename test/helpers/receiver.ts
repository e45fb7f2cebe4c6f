// A webhook receiver on loopback for tests: records every request (raw body bytes, headers) and
// answers with whatever the test's responder says (a status, a redirect, or never).
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { track } from './resources.js';
import { waitFor, type WaitOptions } from './wait.js';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  at: number;
}

/** Answer with a status (and body), 'hang' (never answer), or handle the response yourself. */
export type Responder = (req: Received, n: number) => number | 'hang' | ((res: ServerResponse) => void);

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  respond: Responder;
  /** Resolves with the requests (matching `filter`) once `count` have arrived; rejects after the deadline. */
  waitForRequests(count: number, filter?: (r: Received) => boolean, opts?: WaitOptions | number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Responder = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const rec: Partial<Receiver> & { respond: Responder } = { respond, received };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers, raw: Buffer.concat(chunks), at: Date.now() };
      received.push(r);
      const answer = rec.respond(r, received.length);
      if (answer === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
      } else if (typeof answer === 'function') answer(res);
      else res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer >= 300 ? `status ${answer}` : 'ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = track(`webhook receiver :${port}`, async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return Object.assign(rec, {
    url: `http://127.0.0.1:${port}`,
    port,
    close,
    waitForRequests(count: number, filter: (r: Received) => boolean = () => true, opts?: WaitOptions | number) {
      return waitFor(
        `${count} requests at the receiver`,
        () => {
          const got = received.filter(filter);
          return got.length >= count ? got : false;
        },
        opts,
      );
    },
  }) as Receiver;
}
