// Outbound SMTP connections, kept open between messages and capped per host. The cap is per
// worker process (an in-process counting semaphore keyed by host:port): N worker processes open at
// most N × OUTBOUND_CONNECTIONS_PER_HOST connections to one MX host. Idle connections are reused
// for the next message to the same host (reset with RSET first when their last transaction was
// refused midway), then closed after IDLE_MS.
import { isIP } from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Target } from './types.js';

const IDLE_MS = 30_000;

export interface PooledConnection {
  conn: SMTPConnection;
  key: string;
  closed: boolean;
}

interface HostState {
  open: number;
  idle: { pc: PooledConnection; timer: NodeJS.Timeout }[];
  waiters: (() => void)[];
}

function keyOf(t: Target): string {
  return `${t.host}:${t.port}:${t.secure ? 's' : ''}:${t.auth?.user ?? ''}`;
}

/** Resolves with the first of: the callback, an 'error' or an 'end' of the connection. */
export function settle<T>(
  pc: PooledConnection,
  start: (cb: (err: Error | null, value?: T) => void) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const finish = (err: Error | null, value?: T) => {
      if (done) return;
      done = true;
      pc.conn.removeListener('error', onError);
      pc.conn.removeListener('end', onEnd);
      if (err) reject(err);
      else resolve(value as T);
    };
    const onError = (err: Error) => finish(err);
    // On a 421 nodemailer closes the connection ('end') first and then calls the command's
    // callback with the server's reply: the reply must win, or a provider's throttle (Gmail's
    // 421 4.7.28) would look like a mere network failure.
    const onEnd = () =>
      setImmediate(() => finish(Object.assign(new Error('Connection closed unexpectedly'), { code: 'ECONNECTION' })));
    pc.conn.on('error', onError);
    pc.conn.on('end', onEnd);
    start(finish);
  });
}

export class ConnectionPool {
  private hosts = new Map<string, HostState>();
  private closing = false;

  constructor(
    private readonly perHost: number,
    private readonly heloName: string,
  ) {}

  private state(key: string): HostState {
    let s = this.hosts.get(key);
    if (!s) this.hosts.set(key, (s = { open: 0, idle: [], waiters: [] }));
    return s;
  }

  /** A connected (and authenticated) connection to `target`; waits while the host is at its cap. */
  async acquire(target: Target): Promise<PooledConnection> {
    const key = keyOf(target);
    const s = this.state(key);
    for (;;) {
      const idle = s.idle.pop();
      if (idle) {
        clearTimeout(idle.timer);
        if (!idle.pc.closed) return idle.pc;
        continue;
      }
      if (s.open < this.perHost) break;
      await new Promise<void>((resolve) => s.waiters.push(resolve));
    }
    s.open++;
    try {
      return await this.connect(target, key);
    } catch (err) {
      this.forget(s);
      throw err;
    }
  }

  private async connect(target: Target, key: string): Promise<PooledConnection> {
    const conn = new SMTPConnection({
      host: target.host,
      // SNI carries host names only (RFC 6066 §3): an MX given as an address literal sends none.
      ...(target.name && isIP(target.name) === 0 ? { servername: target.name } : {}),
      port: target.port,
      secure: target.secure,
      name: this.heloName,
      // Opportunistic STARTTLS like every MTA: encrypt when offered, never refuse for a certificate.
      opportunisticTLS: true,
      tls: { rejectUnauthorized: target.verifyTls },
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 5 * 60_000,
      allowInternalNetworkInterfaces: true,
    });
    const pc: PooledConnection = { conn, key, closed: false };
    // A listener for the whole life of the connection: an unhandled 'error' would crash the worker.
    conn.on('error', () => (pc.closed = true));
    conn.on('end', () => (pc.closed = true));
    try {
      await settle<void>(pc, (cb) => conn.connect((err?: Error | null) => cb(err ?? null)));
      if (target.auth) {
        const auth = target.auth;
        await settle<boolean>(pc, (cb) => conn.login({ credentials: auth }, (err, ok) => cb(err ?? null, ok)));
      }
    } catch (err) {
      pc.closed = true;
      conn.close();
      throw err;
    }
    return pc;
  }

  /**
   * Returns a connection: kept for reuse when `reusable` and still open, else closed. `dirty`: its
   * last transaction was left midway (a refused RCPT, say) and is reset first; a completed one
   * (the reply to DATA) leaves nothing to reset (RFC 5321 §4.1.1.4), so that costs no round trip.
   */
  async release(pc: PooledConnection, reusable: boolean, dirty = true): Promise<void> {
    const s = this.state(pc.key);
    if (dirty && reusable && !pc.closed && !this.closing) {
      try {
        await settle<boolean>(pc, (cb) => pc.conn.reset((err, ok) => cb(err ?? null, ok)));
      } catch {
        reusable = false;
      }
    }
    if (!reusable || pc.closed || this.closing) {
      pc.closed = true;
      pc.conn.quit();
      this.forget(s);
      return;
    }
    const timer = setTimeout(() => {
      s.idle = s.idle.filter((i) => i.pc !== pc);
      pc.closed = true;
      pc.conn.quit();
      this.forget(s);
    }, IDLE_MS);
    timer.unref();
    s.idle.push({ pc, timer });
    s.waiters.shift()?.();
  }

  private forget(s: HostState): void {
    s.open--;
    s.waiters.shift()?.();
  }

  close(): void {
    this.closing = true;
    for (const s of this.hosts.values()) {
      for (const { pc, timer } of s.idle) {
        clearTimeout(timer);
        pc.closed = true;
        pc.conn.quit();
      }
      s.idle = [];
    }
  }
}
