// A TCP proxy in front of the test Postgres that breaks the connection at chosen moments, for
// tests of what an answer says was stored (docs/operations.md): Postgres itself keeps running,
// only the path to it fails, exactly where a test wants.
// - `down()` / `up()`: stop and resume listening (new connections are refused: ECONNREFUSED);
// - `breakAfterCommit(marker)`: forwards the statement whose parameters carry `marker` (and the
//   rest of its transaction), and when Postgres's answer reaches ReadyForQuery "idle" (the
//   transaction committed), swallows that answer and cuts both sides, as when a server dies right
//   after COMMIT;
// - `breakBeforeSend(marker)`: cuts the connection instead of forwarding that statement, so that
//   it never runs.
// Each break applies once; `down` with it leaves Postgres unreachable after the cut.
import net, { type AddressInfo } from 'node:net';
import { track } from './resources.js';

/** ReadyForQuery with status 'I': no transaction open, the last one ended. */
const READY_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

export interface PgProxy {
  port: number;
  url(database: string): string;
  down(): Promise<void>;
  up(): Promise<void>;
  breakAfterCommit(marker: string, opts?: { thenDown?: boolean }): Promise<void>;
  breakBeforeSend(marker: string, opts?: { thenDown?: boolean }): Promise<void>;
  close(): Promise<void>;
}

interface Armed {
  marker: Buffer;
  when: 'after-commit' | 'before-send';
  thenDown: boolean;
  done: () => void;
}

export async function startPgProxy(target: { host: string; port: number }): Promise<PgProxy> {
  const sockets = new Set<net.Socket>();
  let armed: Armed | null = null;
  let listening = false;
  let port = 0;

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    let tail = Buffer.alloc(0);
    let cutAfterCommit = false;
    let answerTail = Buffer.alloc(0);
    const cut = () => {
      client.destroy();
      upstream.destroy();
      const a = armed!;
      armed = null;
      if (a.thenDown) void proxy.down().then(a.done);
      else a.done();
    };
    client.on('data', (chunk: Buffer) => {
      const seen = Buffer.concat([tail, chunk]);
      tail = seen.subarray(Math.max(0, seen.length - 256));
      if (armed && !cutAfterCommit && seen.includes(armed.marker)) {
        if (armed.when === 'before-send') return cut();
        cutAfterCommit = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutAfterCommit) {
        const seen = Buffer.concat([answerTail, chunk]);
        answerTail = seen.subarray(Math.max(0, seen.length - READY_IDLE.length));
        if (seen.includes(READY_IDLE)) return cut();
      }
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  await listen();

  const arm = (marker: string, when: Armed['when'], thenDown: boolean) =>
    new Promise<void>((resolve) => {
      armed = { marker: Buffer.from(marker), when, thenDown, done: resolve };
    });

  const proxy: PgProxy = {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async down() {
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    async up() {
      if (!listening) await listen();
    },
    // Resolve when the break happened (the test awaits it alongside the request).
    breakAfterCommit: (marker, opts = {}) => arm(marker, 'after-commit', opts.thenDown ?? false),
    breakBeforeSend: (marker, opts = {}) => arm(marker, 'before-send', opts.thenDown ?? false),
    close: async () => {},
  };
  proxy.close = track(`pg proxy ${port}`, async () => {
    armed = null;
    await proxy.down();
  });
  return proxy;
}
