// Outbound SMTP connections, kept open between messages and capped per host. The cap is per
// worker process (an in-process counting semaphore keyed by host:port): N worker processes open at
// most N × OUTBOUND_CONNECTIONS_PER_HOST connections to one MX host. Idle connections are reused
// for the next message to the same host (reset with RSET first when their last transaction was
// refused midway), then closed after IDLE_MS. A connection from a pool address is keyed by that
// address and its EHLO name too: it is reused only for mail of the same source, and the cap
// holds per host and source. Transactional mail waiting for a connection to a busy host is served
// before broadcast mail waiting for the same host (`urgent`), so a password reset to Gmail waits
// for one message's transaction, not behind every newsletter queued for Gmail's connections.
//
// Each connection is a small state machine, and a host's slots are its live connections:
//   connecting → busy ⇄ idle → closed   (closed from any state; final)
// `open` is the count of connections not closed (= busy + idle, a connection still connecting
// counts as busy), so a slot comes back exactly when its connection closes, whoever closes it:
// the caller releasing it broken, the idle timer, or the server (idle-timeout, restart, an error
// mid-transaction). An idle connection the server closes leaves the idle list at once.
import { isIP } from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Source, Target } from './types.js';

const IDLE_MS = 30_000;
/** Longest wait for a free connection to a host before the message is deferred instead. */
export const ACQUIRE_TIMEOUT_MS = 60_000;

export type ConnectionState = 'connecting' | 'busy' | 'idle' | 'closed';

export interface PooledConnection {
  conn: SMTPConnection;
  key: string;
  state: ConnectionState;
  /** Handed out again from the idle list (not connected for this acquire). */
  reused: boolean;
  /** While idle: when it became idle (the most recent is reused first) and its idle timer. */
  idleSince: number;
  idleTimer: NodeJS.Timeout | null;
}

/** Closed by anyone (the server, an error, the pool): read afresh each time, the state moves on its own. */
export function isClosed(pc: PooledConnection): boolean {
  return pc.state === 'closed';
}

/** A host's (and source's) connections: every one not closed holds one of its slots. */
interface HostState {
  live: Set<PooledConnection>;
  /** Waiting for a slot: urgent (transactional) ones are woken first, each class in order. */
  urgent: (() => void)[];
  waiters: (() => void)[];
}

/** A host's slots as counted by the pool (`open` = `busy` + `idle`), and the acquires waiting. */
export interface PoolCounts {
  open: number;
  busy: number;
  idle: number;
  waiting: number;
}

function keyOf(t: Target, source: Source | null): string {
  const local = source ? `${source.localAddress}|${source.ehlo ?? ''}` : '';
  // A verified session is verified for one name: never lent to an unverified use, nor the reverse.
  const tls = t.verifyTls || t.requireTls ? `|${t.requireTls ? 'r' : ''}${t.verifyTls ? 'v' : ''}|${t.name ?? ''}` : '';
  return `${t.host}:${t.port}:${t.secure ? 's' : ''}:${t.auth?.user ?? ''}:${local}${tls}`;
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

function wakeOne(s: HostState): void {
  (s.urgent.shift() ?? s.waiters.shift())?.();
}

/** The connection idle for the shortest time (a warm one is reused first), if any. */
function newestIdle(s: HostState): PooledConnection | null {
  let found: PooledConnection | null = null;
  for (const pc of s.live) {
    if (pc.state === 'idle' && (!found || pc.idleSince >= found.idleSince)) found = pc;
  }
  return found;
}

export class ConnectionPool {
  private hosts = new Map<string, HostState>();
  private closing = false;

  constructor(
    private readonly perHost: number,
    private readonly heloName: string,
    private readonly acquireTimeoutMs = ACQUIRE_TIMEOUT_MS,
  ) {}

  private state(key: string): HostState {
    let s = this.hosts.get(key);
    if (!s) this.hosts.set(key, (s = { live: new Set(), urgent: [], waiters: [] }));
    return s;
  }

  /** The slots of the connections to `target` from `source`. */
  counts(target: Target, source: Source | null = null): PoolCounts {
    const s = this.hosts.get(keyOf(target, source));
    if (!s) return { open: 0, busy: 0, idle: 0, waiting: 0 };
    let idle = 0;
    for (const pc of s.live) if (pc.state === 'idle') idle++;
    return { open: s.live.size, busy: s.live.size - idle, idle, waiting: s.urgent.length + s.waiters.length };
  }

  /**
   * A connected (and authenticated) connection to `target`; waits while the host is at its cap,
   * ahead of every non-urgent waiter when `urgent`.
   */
  async acquire(target: Target, source: Source | null = null, urgent = false): Promise<PooledConnection> {
    const key = keyOf(target, source);
    const s = this.state(key);
    const deadline = Date.now() + this.acquireTimeoutMs;
    let woken = false;
    for (;;) {
      const idle = newestIdle(s);
      if (idle) {
        clearTimeout(idle.idleTimer!);
        idle.idleTimer = null;
        idle.state = 'busy';
        idle.reused = true;
        return idle;
      }
      if (s.live.size < this.perHost) break;
      // Woken but the slot went to another: back to the front of its class, not the end.
      await this.waitForSlot(s, key, deadline, urgent, woken);
      woken = true;
    }
    const pc = this.open(target, key, source, s);
    try {
      await this.connect(pc, target);
    } catch (err) {
      this.retire(pc, s);
      throw err;
    }
    // The server may have closed it between its last reply and now.
    if (isClosed(pc)) throw Object.assign(new Error('Connection closed unexpectedly'), { code: 'ECONNECTION' });
    pc.state = 'busy';
    return pc;
  }

  /**
   * Waits for a released slot, at most until `deadline`: a slot that is never given back (a bug,
   * a hung server) then costs a deferral, not a delivery worker stuck for good.
   */
  private waitForSlot(s: HostState, key: string, deadline: number, urgent: boolean, front: boolean): Promise<void> {
    const line = urgent ? s.urgent : s.waiters;
    return new Promise<void>((resolve, reject) => {
      const waiter = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(
        () => {
          const at = line.indexOf(waiter);
          if (at >= 0) line.splice(at, 1);
          const err = new Error(
            `no free connection to ${key.split(':').slice(0, 2).join(':')} within ${this.acquireTimeoutMs} ms`,
          );
          reject(Object.assign(err, { code: 'EPOOLTIMEOUT' }));
        },
        Math.max(0, deadline - Date.now()),
      );
      if (front) line.unshift(waiter);
      else line.push(waiter);
    });
  }

  /** Takes a slot for a new connection (not connected yet). */
  private open(target: Target, key: string, source: Source | null, s: HostState): PooledConnection {
    const conn = new SMTPConnection({
      host: target.host,
      ...(source ? { localAddress: source.localAddress } : {}),
      // SNI carries host names only (RFC 6066 §3): an MX given as an address literal sends none.
      ...(target.name && isIP(target.name) === 0 ? { servername: target.name } : {}),
      port: target.port,
      secure: target.secure,
      name: source?.ehlo ?? this.heloName,
      // Opportunistic STARTTLS like every MTA (encrypt when offered, never refuse for a certificate)
      // unless the domain's TLS policy requires it (tls-policy.ts).
      opportunisticTLS: !target.requireTls,
      requireTLS: target.requireTls ?? false,
      tls: { rejectUnauthorized: target.verifyTls, ...(target.ca ? { ca: target.ca } : {}) },
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 5 * 60_000,
      allowInternalNetworkInterfaces: true,
    });
    const pc: PooledConnection = { conn, key, state: 'connecting', reused: false, idleSince: 0, idleTimer: null };
    s.live.add(pc);
    // For the whole life of the connection: an unhandled 'error' would crash the worker, and a
    // connection that ends, in whatever state, gives its slot back now.
    conn.on('error', () => this.retire(pc, s));
    conn.on('end', () => this.retire(pc, s));
    return pc;
  }

  private async connect(pc: PooledConnection, target: Target): Promise<void> {
    const { conn } = pc;
    await settle<void>(pc, (cb) => conn.connect((err?: Error | null) => cb(err ?? null)));
    if (target.auth) {
      const auth = target.auth;
      await settle<boolean>(pc, (cb) => conn.login({ credentials: auth }, (err, ok) => cb(err ?? null, ok)));
    }
  }

  /**
   * The one way out of every state: the connection is closed (QUIT when `polite` and it still
   * works) and its slot goes to the next waiter. Runs once per connection.
   */
  private retire(pc: PooledConnection, s: HostState, polite = false): void {
    if (pc.state === 'closed') return;
    pc.state = 'closed';
    if (pc.idleTimer) clearTimeout(pc.idleTimer);
    pc.idleTimer = null;
    s.live.delete(pc);
    if (polite) pc.conn.quit();
    else pc.conn.close();
    wakeOne(s);
  }

  /**
   * Returns a connection: kept for reuse when `reusable` and still open, else closed. `dirty`: its
   * last transaction was left midway (a refused RCPT, say) and is reset first; a completed one
   * (the reply to DATA) leaves nothing to reset (RFC 5321 §4.1.1.4), so that costs no round trip.
   */
  async release(pc: PooledConnection, reusable: boolean, dirty = true): Promise<void> {
    const s = this.state(pc.key);
    if (pc.state !== 'busy') return; // closed meanwhile: its slot is already back
    if (dirty && reusable && !this.closing) {
      try {
        await settle<boolean>(pc, (cb) => pc.conn.reset((err, ok) => cb(err ?? null, ok)));
      } catch {
        reusable = false;
      }
    }
    if (pc.state !== 'busy') return;
    if (!reusable || this.closing) {
      this.retire(pc, s, true);
      return;
    }
    pc.state = 'idle';
    pc.idleSince = performance.now();
    pc.idleTimer = setTimeout(() => this.retire(pc, s, true), IDLE_MS);
    pc.idleTimer.unref();
    wakeOne(s);
  }

  close(): void {
    this.closing = true;
    for (const s of this.hosts.values()) {
      for (const pc of [...s.live]) if (pc.state === 'idle') this.retire(pc, s, true);
    }
  }
}
