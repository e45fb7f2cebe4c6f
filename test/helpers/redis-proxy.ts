// A TCP proxy in front of the test Redis that can answer as a Redis that was just restarted and
// is still loading its data: while `loading` is on, every command is answered
// `-LOADING Redis is loading the dataset in memory` instead of being forwarded (what Redis says
// after a restart until its append-only file is read back), so a test can put a client exactly
// where a restart puts it. Commands are RESP arrays (what ioredis and BullMQ send). `cut()` drops
// every connection (the clients reconnect at once, as after a short network break).
import net, { type AddressInfo } from 'node:net';
import { track } from './resources.js';

const LOADING = Buffer.from('-LOADING Redis is loading the dataset in memory\r\n');

export interface RedisProxy {
  port: number;
  url: string;
  loading: boolean;
  cut(): void;
  close(): Promise<void>;
}

/** How many complete RESP commands `buf` holds from its start, and the bytes they take. */
function completeCommands(buf: Buffer): { count: number; used: number } {
  let at = 0;
  let count = 0;
  const line = (from: number): [string, number] | null => {
    const end = buf.indexOf('\r\n', from);
    return end < 0 ? null : [buf.toString('latin1', from, end), end + 2];
  };
  for (;;) {
    const head = line(at);
    if (!head || !head[0].startsWith('*')) return { count, used: at };
    let next = head[1];
    for (let i = 0; i < Number(head[0].slice(1)); i++) {
      const len = line(next);
      if (!len) return { count, used: at };
      next = len[1] + Number(len[0].slice(1)) + 2;
      if (next > buf.length) return { count, used: at };
    }
    at = next;
    count++;
  }
}

export async function startRedisProxy(target: { host: string; port: number }): Promise<RedisProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      if (!proxy.loading) {
        upstream.write(Buffer.concat([pending, chunk]));
        pending = Buffer.alloc(0);
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      const { count, used } = completeCommands(pending);
      pending = pending.subarray(used);
      for (let i = 0; i < count; i++) client.write(LOADING);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const proxy: RedisProxy = {
    port,
    url: `redis://127.0.0.1:${port}`,
    loading: false,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: async () => {},
  };
  proxy.close = track(`redis proxy ${port}`, async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  });
  return proxy;
}
