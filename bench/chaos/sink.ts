// The receiving end of the fault suite (and of the outage tests): an SMTP server on loopback that
// records every accepted message's Message-ID (duplicates are counted by it) and, when the
// message carries one, the fault suite's own send key (`X-Chaos-Send`; for a broadcast of the
// load, its recipient), each with the time it
// first arrived; it can slow each DATA down, answer every transaction with 421 (a receiving
// server having a bad minute), close its idle connections (an idle timeout), and restart.
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** The header the fault suite's load puts on every send (bench/chaos/load.ts). */
export const SEND_KEY_HEADER = 'X-Chaos-Send';
/**
 * The domain of the contacts of the load's broadcasts (bench/chaos/broadcast.ts): a message to
 * one of them is recorded under its recipient, as a broadcast carries no send key.
 */
export const BROADCAST_DOMAIN = 'bc.test';

export interface MessageSink {
  port: number;
  /** Message-ID → times accepted. */
  accepted: Map<string, number>;
  /** Message-ID → when it was first accepted (ms since the epoch). */
  firstAt: Map<string, number>;
  /** Send key (`X-Chaos-Send`) → when a message carrying it was first accepted. */
  sends: Map<string, number>;
  /** Message-ID → the send key it carried. */
  keyOf: Map<string, string>;
  /** Accepted messages, duplicates included. */
  total: number;
  /** When true every MAIL FROM is answered 421 4.3.2 (and the connection closed). */
  refusing: boolean;
  /** Milliseconds each DATA waits before its 250. */
  delayMs: number;
  /**
   * When above 0, a connection that sent nothing for this long is closed (421 4.4.2, then the
   * close), as a server's idle timeout does; checked every second.
   */
  idleCloseMs: number;
  /** Connections closed for being idle. */
  idleClosed: number;
  /**
   * Stops as a server being restarted does (no new connections; each open session answers its
   * next command 421 and is closed within a second, a message in DATA is answered first), stays
   * down for `downMs`, and listens again on the same port.
   */
  restart(downMs: number): Promise<void>;
  close(): Promise<void>;
}

function headerOf(raw: string, name: string): string {
  const m = new RegExp(`^${name}:\\s*<?([^>\\r\\n]+?)>?\\s*$`, 'im').exec(raw);
  return m ? m[1]!.toLowerCase() : '';
}

export async function startMessageSink(opts: { delayMs?: number } = {}): Promise<MessageSink> {
  const sink: MessageSink = {
    port: 0,
    accepted: new Map(),
    firstAt: new Map(),
    sends: new Map(),
    keyOf: new Map(),
    total: 0,
    refusing: false,
    delayMs: opts.delayMs ?? 0,
    idleCloseMs: 0,
    idleClosed: 0,
    restart: async () => {},
    close: async () => {},
  };
  let server = serverFor(sink);
  await listen(server, 0);
  sink.port = (server.server.address() as AddressInfo).port;
  const idleTimer = setInterval(() => closeIdle(sink, server), 1000);
  idleTimer.unref();
  sink.restart = async (downMs) => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise((r) => setTimeout(r, downMs));
    server = serverFor(sink);
    await listen(server, sink.port);
  };
  sink.close = () => {
    clearInterval(idleTimer);
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return sink;
}

const lastInput = new WeakMap<Socket, number>();

function closeIdle(sink: MessageSink, server: SMTPServer): void {
  if (sink.idleCloseMs <= 0) return;
  const now = Date.now();
  for (const socket of sockets.get(server) ?? []) {
    if (now - (lastInput.get(socket) ?? now) < sink.idleCloseMs) continue;
    sockets.get(server)!.delete(socket);
    socket.end('421 4.4.2 Idle timeout, closing connection\r\n');
    sink.idleClosed++;
  }
}

const sockets = new WeakMap<SMTPServer, Set<Socket>>();

function listen(server: SMTPServer, port: number): Promise<void> {
  return new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
}

function serverFor(sink: MessageSink): SMTPServer {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    size: 50 * 1024 * 1024,
    // A restart gives the sessions open a second to end (then 421 and the close).
    closeTimeout: 1000,
    onMailFrom(_address, _session, cb) {
      if (sink.refusing) return cb(Object.assign(new Error('4.3.2 try again later'), { responseCode: 421 }));
      cb();
    },
    onData(stream, session, cb) {
      // Only the headers are needed: the first 8 KiB hold the Message-ID and the send key.
      let head = '';
      stream.on('data', (c: Buffer) => {
        if (head.length < 8192) head += c.toString('latin1');
      });
      stream.on('end', () => {
        const finish = () => {
          const now = Date.now();
          const id = headerOf(head, 'Message-ID');
          sink.accepted.set(id, (sink.accepted.get(id) ?? 0) + 1);
          if (!sink.firstAt.has(id)) sink.firstAt.set(id, now);
          const rcpt = session.envelope.rcptTo[0]?.address.toLowerCase() ?? '';
          const key = headerOf(head, SEND_KEY_HEADER) || (rcpt.endsWith(`.${BROADCAST_DOMAIN}`) ? rcpt : '');
          if (key && !sink.sends.has(key)) sink.sends.set(key, now);
          if (key) sink.keyOf.set(id, key);
          sink.total++;
          cb(null, 'Ok: queued');
        };
        if (sink.delayMs > 0) setTimeout(finish, sink.delayMs);
        else finish();
      });
    },
  });
  server.on('error', () => {});
  const open = new Set<Socket>();
  sockets.set(server, open);
  server.server.on('connection', (socket: Socket) => {
    open.add(socket);
    lastInput.set(socket, Date.now());
    socket.on('data', () => lastInput.set(socket, Date.now()));
    socket.once('close', () => open.delete(socket));
  });
  return server;
}
