// The receiving end of the fault suite (and of the outage tests): an SMTP server on loopback that
// records every accepted message's Message-ID (duplicates are counted by it) and, when the
// message carries one, the fault suite's own send key (`X-Chaos-Send`), each with the time it
// first arrived; it can slow each DATA down, and can answer every transaction with 421 (a
// receiving server having a bad minute).
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** The header the fault suite's load puts on every send (bench/chaos/load.ts). */
export const SEND_KEY_HEADER = 'X-Chaos-Send';

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
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    size: 50 * 1024 * 1024,
    onMailFrom(_address, _session, cb) {
      if (sink.refusing) return cb(Object.assign(new Error('4.3.2 try again later'), { responseCode: 421 }));
      cb();
    },
    onData(stream, _session, cb) {
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
          const key = headerOf(head, SEND_KEY_HEADER);
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.server.address() as AddressInfo).port;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return sink;
}
