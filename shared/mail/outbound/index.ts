// Outbound delivery: route a recipient domain (smarthost or MX), then send each message on one
// pooled connection, one SMTP transaction per recipient (VERP gives every recipient its own
// MAIL FROM, and its own RCPT answer is its own outcome). Returns results as data through
// `after`, never throws for an SMTP outcome.
import type { Config } from '../../config.js';
import { ConnectionPool, settle, type PooledConnection } from './pool.js';
import { connectionFailure, fromError, fromReply, parseReply } from './reply.js';
import { Router } from './route.js';
import type { AttemptResult, OutboundMessage, Route } from './types.js';

export type { AttemptResult, OutboundMessage, Route } from './types.js';

export interface DeliverHooks {
  /**
   * Called before each message is sent (e.g. to wait for the provider's token bucket); false
   * skips the message (the caller records why), and `after` is not called for it.
   */
  before?(m: OutboundMessage): Promise<boolean>;
  /** Receives each message's result as soon as it is known. */
  after(m: OutboundMessage, result: AttemptResult): Promise<void>;
}

type OutboundConfig = Pick<
  Config,
  'smtpSmarthost' | 'dnsServers' | 'outboundPort' | 'heloName' | 'outboundConnectionsPerHost'
>;

export class Outbound {
  private readonly router: Router;
  private readonly pool: ConnectionPool;

  constructor(config: OutboundConfig) {
    this.router = new Router(config);
    this.pool = new ConnectionPool(config.outboundConnectionsPerHost, config.heloName);
  }

  route(domain: string): Promise<Route> {
    return this.router.route(domain);
  }

  async deliver(route: Route, messages: OutboundMessage[], hooks: DeliverHooks): Promise<void> {
    if (route.failure) {
      for (const m of messages) await hooks.after(m, route.failure);
      return;
    }
    // Results are recorded while the connection moves on to the next message (and is released
    // without waiting for them): a connection is never held during the caller's bookkeeping.
    const recorded: Promise<void>[] = [];
    const after = (m: OutboundMessage, r: AttemptResult) => void recorded.push(hooks.after(m, r));
    let sendError: unknown = null;
    try {
      await this.sendToTargets(route, messages, hooks.before, after);
    } catch (err) {
      sendError = err;
    }
    const failed = (await Promise.allSettled(recorded)).find((r) => r.status === 'rejected');
    if (sendError !== null) throw sendError;
    if (failed) throw failed.reason;
  }

  private async sendToTargets(
    route: Route,
    messages: OutboundMessage[],
    before: DeliverHooks['before'],
    after: (m: OutboundMessage, result: AttemptResult) => void,
  ): Promise<void> {
    let pending = [...messages];
    let lastError: unknown = new Error(`no host to deliver ${route.domain} to`);
    for (const target of route.targets) {
      if (pending.length === 0) return;
      let pc: PooledConnection;
      try {
        pc = await this.pool.acquire(target);
      } catch (err) {
        // Refused, unreachable, bad greeting: the next host by preference gets its chance.
        lastError = err;
        continue;
      }
      const { sent, broken, dirty } = await this.sendAll(pc, target.host, pending, before, after);
      pending = pending.slice(sent);
      await this.pool.release(pc, !broken, dirty);
    }
    for (const m of pending) after(m, connectionFailure(lastError, null));
  }

  /**
   * Sends until done or the connection breaks; `sent` counts messages that got a result, `dirty`
   * tells that the last transaction was refused midway (the connection needs an RSET).
   */
  private async sendAll(
    pc: PooledConnection,
    host: string,
    messages: OutboundMessage[],
    before: DeliverHooks['before'],
    after: (m: OutboundMessage, result: AttemptResult) => void,
  ): Promise<{ sent: number; broken: boolean; dirty: boolean }> {
    let dirty = false;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (before && !(await before(m))) continue;
      if (pc.closed) return { sent: i, broken: true, dirty };
      try {
        if (dirty) await settle<boolean>(pc, (cb) => pc.conn.reset((err, ok) => cb(err ?? null, ok)));
        dirty = false;
        const info = await settle<{ response: string }>(pc, (cb) =>
          pc.conn.send({ from: m.from, to: [m.to] }, m.raw, (err, info) => cb(err ?? null, info)),
        );
        const parsed = parseReply(info.response);
        const reply = parsed.code !== 0 ? parsed : { code: 250, enhanced: null, text: info.response };
        after(m, fromReply(reply, host));
      } catch (err) {
        const result = fromError(err, host);
        // No reply means the connection failed mid-transaction: this message is deferred (it
        // may or may not have arrived; a retry errs towards a duplicate over a loss, RFC 5321 §6.1).
        after(m, result);
        if (!result.reply || pc.closed) return { sent: i + 1, broken: true, dirty: true };
        dirty = true;
      }
    }
    return { sent: messages.length, broken: false, dirty };
  }

  close(): void {
    this.pool.close();
  }
}
