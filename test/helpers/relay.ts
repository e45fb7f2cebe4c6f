// Starts the real SMTP relay (createRelayServer) on an ephemeral loopback port, with a TestApi's
// dependencies (same database, Redis prefix, key cache and rate limiter), and gives a nodemailer
// transport for a key. The self-signed certificate is generated once per test run.
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import type { Config } from '../../shared/config.js';
import { createRelayServer } from '../../api/smtp/relay-server.js';
import { selfSignedCertificate } from '../../api/smtp/relay-tls.js';
import { track } from './resources.js';
import type { TestApi } from './stack.js';

let cert: Promise<{ key: string; cert: string }> | null = null;

export interface TestRelay {
  port: number;
  close(): Promise<void>;
  /** A transport that authenticates with the key (STARTTLS required, certificate not checked). */
  transport(user: string, pass: string, extra?: Record<string, unknown>): nodemailer.Transporter;
}

export async function startRelay(api: TestApi, overrides: Partial<Config> = {}): Promise<TestRelay> {
  cert ??= selfSignedCertificate('localhost');
  const tls = await cert;
  const server = createRelayServer({ ...api.deps, config: { ...api.config, ...overrides } }, tls);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  const transports: nodemailer.Transporter[] = [];
  const close = track(`relay ${port}`, async () => {
    for (const t of transports) t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    port,
    close,
    transport(user, pass, extra = {}) {
      const t = nodemailer.createTransport({
        host: '127.0.0.1',
        port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        auth: { user, pass },
        ...extra,
      });
      transports.push(t);
      return t;
    },
  };
}

/** The SMTP reply of a failed send ("550 5.7.1 …"), or a failure when the send succeeded. */
export async function refusal(p: Promise<unknown>): Promise<{ response: string; command: string; code: number }> {
  try {
    await p;
  } catch (err) {
    const e = err as { response?: string; command?: string; responseCode?: number };
    return { response: e.response ?? String(err), command: e.command ?? '', code: e.responseCode ?? 0 };
  }
  throw new Error('expected the relay to refuse the message, but it was accepted');
}
