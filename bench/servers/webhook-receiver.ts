// The webhook receiver of bench/webhooks, on PORT: what a customer's endpoint does. Every POST
// is verified against BENCH_WEBHOOK_SECRET (raw body, `tern-signature`), answered 204 (401 when
// it does not verify), and its latency noted: receipt time minus the body's `created_at` (for
// Tern the event's insert time, for the floor the send time). GET /stats returns the counts and
// latencies (with `latencies=1`) since the last `reset=1`. Both sides of the benchmark post here.
import { createServer } from 'node:http';
import { isValidSignature } from '../../shared/webhooks/signing.js';

const secret = process.env.BENCH_WEBHOOK_SECRET ?? '';
const header = `${process.env.BRAND ?? 'tern'}-signature`;
let received = 0;
let refused = 0;
let latencies: number[] = [];

function onHook(raw: Buffer, signature: string | undefined): number {
  if (!isValidSignature(raw, signature, secret)) {
    refused++;
    return 401;
  }
  received++;
  const createdAt = (JSON.parse(raw.toString('utf8')) as { created_at?: string }).created_at;
  if (createdAt) latencies.push(Date.now() - Date.parse(createdAt));
  return 204;
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url?.startsWith('/stats')) {
    const body = JSON.stringify({ received, refused, ...(req.url.includes('latencies=1') ? { latencies } : {}) });
    if (req.url.includes('reset=1')) {
      received = 0;
      refused = 0;
      latencies = [];
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const sig = req.headers[header];
    res.writeHead(onHook(Buffer.concat(chunks), Array.isArray(sig) ? sig.join(',') : sig)).end();
  });
});
server.keepAliveTimeout = 10_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
