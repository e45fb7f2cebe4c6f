import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import Koa from 'koa';
import Stripe from 'stripe';
import { isValidSignature, sign, verify, WebhookVerificationError } from '../../shared/webhooks/signing.js';
import { newSigningSecret } from '../../shared/webhooks/rules.js';
import { track } from '../helpers/resources.js';

const secret = newSigningSecret();
const body = JSON.stringify({ type: 'email.delivered', created_at: '2025-01-01T00:00:00.000Z', data: { x: 'é' } });

// The receiver examples of docs/webhooks.md, kept identical here so they are tested.
function koaReceiver(signingSecret: string, seen: unknown[]): Koa {
  const app = new Koa();
  app.use(async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    if (!isValidSignature(raw, ctx.get('tern-signature'), signingSecret)) {
      ctx.status = 401;
      return;
    }
    seen.push(JSON.parse(raw.toString('utf8')));
    ctx.status = 204;
  });
  return app;
}

function expressReceiver(signingSecret: string, seen: unknown[]): express.Express {
  const app = express();
  app.post('/webhooks/tern', express.raw({ type: 'application/json' }), (req, res) => {
    if (!isValidSignature(req.body as Buffer, req.get('tern-signature'), signingSecret)) {
      res.sendStatus(401);
      return;
    }
    seen.push(JSON.parse((req.body as Buffer).toString('utf8')));
    res.sendStatus(204);
  });
  return app;
}

type Handler = Parameters<typeof createServer>[1];

async function listen(handler: Handler): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = track(`receiver ${url}`, async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url, close };
}

describe('webhook signing', () => {
  it('signs t=<seconds>,v1=<hex HMAC of "t.body"> and verifies it', () => {
    const header = sign(body, secret, 1_700_000_000);
    expect(header).to.match(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verify(body, header, secret, 300, 1_700_000_100)).to.equal(true);
    expect(verify(Buffer.from(body), header, secret, 300, 1_700_000_100)).to.equal(true);
  });

  it('refuses a tampered body, another secret, an old timestamp and a malformed header', () => {
    const at = 1_700_000_000;
    const header = sign(body, secret, at);
    expect(() => verify(body.replace('delivered', 'bounced'), header, secret, 300, at)).to.throw(
      WebhookVerificationError,
      /No signature matches/,
    );
    expect(() => verify(body, header, newSigningSecret(), 300, at)).to.throw(WebhookVerificationError);
    expect(() => verify(body, header, secret, 300, at + 301)).to.throw(WebhookVerificationError, /tolerance/);
    expect(() => verify(body, 'v1=abc', secret)).to.throw(WebhookVerificationError, /timestamp/);
    expect(() => verify(body, undefined, secret)).to.throw(WebhookVerificationError, /Missing/);
    expect(isValidSignature(body, 'garbage', secret)).to.equal(false);
  });

  it('accepts any of several v1 entries (secret rotation)', () => {
    const old = newSigningSecret();
    const header = sign(body, [secret, old]);
    expect(header.split(',v1=')).to.have.length(3);
    expect(verify(body, header, secret)).to.equal(true);
    expect(verify(body, header, old)).to.equal(true);
  });

  it("is accepted by Stripe's own verifier with the same secret string", () => {
    const stripe = new Stripe('sk_test_unused');
    const header = sign(body, secret);
    const event = stripe.webhooks.constructEvent(body, header, secret) as unknown as { type: string };
    expect(event.type).to.equal('email.delivered');
    expect(() => stripe.webhooks.constructEvent(body.replace('é', 'e'), header, secret)).to.throw(/signature/i);
    const theirs = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    expect(verify(body, theirs, secret)).to.equal(true);
  });

  const receivers: [string, (seen: unknown[]) => Handler, string][] = [
    ['Koa', (seen) => koaReceiver(secret, seen).callback() as Handler, '/'],
    ['Express', (seen) => expressReceiver(secret, seen) as unknown as Handler, '/webhooks/tern'],
  ];
  for (const [name, build, path] of receivers) {
    it(`the ${name} receiver example verifies the raw body and answers 401 on failure`, async () => {
      const seen: unknown[] = [];
      const srv = await listen(build(seen));
      try {
        const post = (b: string, h: string) =>
          fetch(`${srv.url}${path}`, {
            method: 'POST',
            body: b,
            headers: { 'content-type': 'application/json', 'tern-signature': h },
          });
        expect((await post(body, sign(body, secret))).status).to.equal(204);
        expect((await post(`${body} `, sign(body, secret))).status).to.equal(401);
        expect((await post(body, sign(body, newSigningSecret()))).status).to.equal(401);
        expect(seen).to.have.length(1);
      } finally {
        await srv.close();
      }
    });
  }
});
