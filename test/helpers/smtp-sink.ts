// A scriptable receiving SMTP server (the MX or smarthost of delivery tests) and a local DNS
// server answering MX/A records, both on loopback. The sink can close its connections on command,
// as a receiving server does at its idle timeout (421, then the close) or when it restarts or
// crashes (a reset), and can drop the connection in the middle of a DATA.
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import dns2 from 'dns2';
import { track } from './resources.js';

export interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  user: string | null;
  secure: boolean;
  /** The SMTP session (connection) it came in on. */
  session: string;
}

export type Script = (rcpt: string, count: number) => { code: number; message: string } | null;

export interface Sink {
  port: number;
  received: Received[];
  /** RCPT attempts per address. */
  attempts: Map<string, number>;
  /** When set, DATA waits for this promise before answering. */
  stall: Promise<void> | null;
  /** DATA transfers completed (answered or not). */
  dataEnded: number;
  /** When true, the connection of the next DATA is reset once its message is in, before the reply. */
  dropOnData: boolean;
  /** The connections open now, by the client's port. */
  connections: Map<number, Socket>;
  /** The most connections open at once so far. */
  peakConnections: number;
  /**
   * Closes the connections whose client port `which` accepts (all by default): `timeout` says
   * 421 4.4.2 first and ends the connection (an idle timeout), `reset` destroys it (a crash).
   */
  closeConnections(how: 'timeout' | 'reset', which?: (clientPort: number) => boolean): void;
  close(): Promise<void>;
}

/** Where a sink listens: 127.0.0.1 on a free port by default (another address may share a port). */
export interface SinkAddress {
  host?: string;
  port?: number;
}

export async function startSink(
  script: Script = () => null,
  extra: Partial<SMTPServerOptions> = {},
  at: SinkAddress = {},
): Promise<Sink> {
  const sink: Sink = {
    port: 0,
    received: [],
    attempts: new Map(),
    stall: null,
    dataEnded: 0,
    dropOnData: false,
    connections: new Map(),
    peakConnections: 0,
    closeConnections(how, which = () => true) {
      for (const [port, socket] of sink.connections) {
        if (!which(port)) continue;
        if (how === 'reset') socket.destroy();
        else socket.end('421 4.4.2 Idle timeout, closing connection\r\n');
        sink.connections.delete(port);
      }
    },
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onRcptTo(address, _session, cb) {
      const rcpt = address.address.toLowerCase();
      const n = (sink.attempts.get(rcpt) ?? 0) + 1;
      sink.attempts.set(rcpt, n);
      const answer = script(rcpt, n);
      if (answer) return cb(Object.assign(new Error(answer.message), { responseCode: answer.code }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        sink.dataEnded++;
        if (sink.dropOnData) {
          sink.dropOnData = false;
          return sink.closeConnections('reset', (port) => port === session.remotePort);
        }
        const finish = () => {
          sink.received.push({
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks),
            user: (session.user as string | undefined) ?? null,
            secure: session.secure,
            session: session.id,
          });
          cb(null, 'Ok: queued');
        };
        if (sink.stall) void sink.stall.then(finish);
        else finish();
      });
    },
    ...extra,
  });
  server.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort!;
    sink.connections.set(port, socket);
    sink.peakConnections = Math.max(sink.peakConnections, sink.connections.size);
    socket.once('close', () => {
      if (sink.connections.get(port) === socket) sink.connections.delete(port);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port ?? 0, at.host ?? '127.0.0.1', resolve);
  });
  sink.port = (server.server.address() as AddressInfo).port;
  sink.close = track(`smtp sink ${sink.port}`, () => new Promise<void>((resolve) => server.close(() => resolve())));
  return sink;
}

export interface DnsZone {
  mx?: Record<string, { exchange: string; priority: number }[]>;
  a?: Record<string, string[]>;
}

export async function startDns(zone: DnsZone): Promise<{ server: string; close(): Promise<void> }> {
  const { Packet } = dns2;
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const q = request.questions[0]!;
      const name = q.name.toLowerCase();
      if (q.type === Packet.TYPE.MX) {
        for (const m of zone.mx?.[name] ?? []) {
          response.answers.push({ name, type: Packet.TYPE.MX, class: Packet.CLASS.IN, ttl: 60, ...m } as never);
        }
      } else if (q.type === Packet.TYPE.A) {
        for (const address of zone.a?.[name] ?? []) {
          response.answers.push({ name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 60, address } as never);
        }
      }
      // An answer that cannot be sent shows in the test as a DNS time-out; it must not end the
      // test process as an unhandled rejection.
      send(response).catch(() => {});
    },
  });
  const addrs = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addrs as unknown as { udp: AddressInfo }).udp.port;
  const close = track(`dns ${port}`, async () => void (await server.close()));
  return { server: `127.0.0.1:${port}`, close };
}
