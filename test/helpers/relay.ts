// Starts the real SMTP relay (createRelayServer) on an ephemeral loopback port, with a TestApi's
// dependencies (same database, Redis prefix, key cache and rate limiter), and gives a nodemailer
// transport for a key. The self-signed certificate is generated once per test run.
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../../shared/config.js';
import { createRelayServer } from '../../api/smtp/relay-server.js';
import { selfSignedCertificate } from '../../api/smtp/relay-tls.js';
import { track } from './resources.js';
import { dataWire } from './smtp-raw.js';
import type { TestApi } from './stack.js';

let cert: Promise<{ key: string; cert: string }> | null = null;

export interface TestRelay {
  port: number;
  close(): Promise<void>;
  /** A transport that authenticates with the key (STARTTLS required, certificate not checked). */
  transport(user: string, pass: string, extra?: Record<string, unknown>): Transporter;
}

export async function startRelay(
  api: TestApi,
  overrides: Partial<Config> = {},
  opts: { secure?: boolean } = {},
): Promise<TestRelay> {
  cert ??= selfSignedCertificate('localhost');
  const tls = await cert;
  const server = createRelayServer({ ...api.deps, config: { ...api.config, ...overrides } }, { ...tls, ...opts });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  const transports: Transporter[] = [];
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

/** A hand-driven SMTP session (for what nodemailer will not send): STARTTLS and AUTH PLAIN done. */
export interface RawSession {
  /** Sends one command line and returns the complete reply ("250 …", multi-line joined by \n). */
  command(line: string): Promise<string>;
  /** Sends DATA and the message's bytes as they are (smtp-raw.ts dataWire); returns the reply. */
  data(message: Buffer): Promise<string>;
  /** The EHLO replies before and after STARTTLS. */
  ehlo: { plain: string; tls: string };
  close(): Promise<void>;
}

export async function rawSession(port: number, user: string, pass: string): Promise<RawSession> {
  let socket: net.Socket | tls.TLSSocket = net.connect(port, '127.0.0.1');
  let buffer = '';
  let waiting: ((reply: string) => void) | null = null;
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    // A reply is complete at a line "NNN text" (a space, not a dash, after the code).
    const m = /(^|\r\n)(\d{3}) [^\r\n]*\r\n$/.exec(buffer);
    if (m && waiting) {
      const reply = buffer.trimEnd().replace(/\r\n/g, '\n');
      buffer = '';
      const w = waiting;
      waiting = null;
      w(reply);
    }
  };
  const next = () => new Promise<string>((resolve) => (waiting = resolve));
  socket.on('data', onData);
  const closed = track(`raw smtp ${port}`, async () => void socket.destroy());
  const command = async (line: string) => {
    const reply = next();
    socket.write(`${line}\r\n`);
    return await reply;
  };
  await next(); // greeting
  const plain = await command('EHLO client.test');
  await command('STARTTLS');
  socket.off('data', onData);
  socket = tls.connect({ socket, rejectUnauthorized: false });
  await new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()));
  socket.on('data', onData);
  const secured = await command('EHLO client.test');
  const data = async (message: Buffer) => {
    const go = await command('DATA');
    if (!go.startsWith('354')) return go;
    const reply = next();
    socket.write(dataWire(message).wire);
    return await reply;
  };
  const auth = await command(`AUTH PLAIN ${Buffer.from(`\0${user}\0${pass}`).toString('base64')}`);
  if (!auth.startsWith('235')) throw new Error(`AUTH failed: ${auth}`);
  return { command, data, ehlo: { plain, tls: secured }, close: closed };
}
