// The webhook receiver of the fault suite: verifies every signature (raw body, the endpoint's
// secret), records each event by its identity (type, email, recipient, created_at: the body has
// no event id) with the delivery ids it came under and the time it first arrived, and can answer
// 500 to everything for a while.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isValidSignature } from '../../shared/webhooks/signing.js';

export interface WebhookReceiver {
  url: string;
  /** Set once the endpoint exists. */
  secret: string;
  failing: boolean;
  /** Event key → delivery ids it was received under (one entry per 2xx answered). */
  events: Map<string, string[]>;
  /** Event key → when it was first received (ms since the epoch). */
  firstAt: Map<string, number>;
  badSignatures: number;
  close(): Promise<void>;
}

export function eventKey(type: string, emailId: string, recipient: string, createdAt: string): string {
  return `${type}|${emailId}|${recipient}|${new Date(createdAt).toISOString()}`;
}

export async function startWebhookReceiver(brand = 'tern'): Promise<WebhookReceiver> {
  const r: WebhookReceiver = {
    url: '',
    secret: '',
    failing: false,
    events: new Map(),
    firstAt: new Map(),
    badSignatures: 0,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (r.failing) {
        res.writeHead(500).end('down for a while');
        return;
      }
      const body = Buffer.concat(chunks);
      if (!isValidSignature(body, req.headers[`${brand}-signature`], r.secret)) {
        r.badSignatures++;
        res.writeHead(401).end('bad signature');
        return;
      }
      const env = JSON.parse(body.toString()) as {
        type: string;
        created_at: string;
        data: { email_id?: string; recipient?: string };
      };
      const key = eventKey(env.type, env.data.email_id ?? '', env.data.recipient ?? '', env.created_at);
      const delivery = String(req.headers[`${brand}-delivery-id`] ?? '');
      r.events.set(key, [...(r.events.get(key) ?? []), delivery]);
      if (!r.firstAt.has(key)) r.firstAt.set(key, Date.now());
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  r.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}
