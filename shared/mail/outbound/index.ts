// Outbound delivery: route a recipient domain (smarthost or MX), then send each message on one
// pooled connection, one SMTP transaction per recipient (VERP gives every recipient its own
// MAIL FROM, and its own RCPT answer is its own outcome). Returns results as data through
// `after`, never throws for an SMTP outcome. A message of an IP pool leaves from the pool's
// address (bound as the local address, its own EHLO name), on connections of that address only.
import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import type { MtaSts } from './mta-sts.js';
import { ConnectionPool, isClosed, settle, type PooledConnection } from './pool.js';
import { connectionFailure, fromError, fromReply, parseReply } from './reply.js';
import { Router } from './route.js';
import type { SmarthostWatch } from './smarthost-watch.js';
import { applyTlsPolicy, policyError, tlsFacts } from './tls-policy.js';
import type { AttemptResult, OutboundMessage, Route, Source, Target } from './types.js';

export type { AttemptResult, OutboundMessage, Route, Source } from './types.js';

export interface DeliverHooks {
  /**
   * Called before each message is sent (e.g. to wait for the provider's token bucket); false
   * skips the message (the caller records why), and `after` is not called for it.
   */
  before?: (m: OutboundMessage) => Promise<boolean>;
  /** Receives each message's result as soon as it is known. */
  after: (m: OutboundMessage, result: AttemptResult) => Promise<void>;
}

type OutboundConfig = Pick<
  Config,
  'smtpSmarthost' | 'dnsServers' | 'outboundPort' | 'heloName' | 'outboundConnectionsPerHost'
>;

export interface OutboundOptions {
  /** How long a message waits for a free connection to its host before it is deferred. */
  acquireTimeoutMs?: number;
  /** Told of every connection to the smarthost: made, or failed (never of a wait for a free one). */
  smarthostWatch?: Pick<SmarthostWatch, 'failed' | 'reached'>;
  /** Recipient domains' MTA-STS policies (direct MX delivery); none: opportunistic TLS everywhere. */
  mtaSts?: MtaSts;
  /** Trust anchors added to Node's store for MX certificates checked under a policy. */
  trustedCa?: string[];
}

/** What a connection did with a run of messages (Outbound.sendAll). */
interface Sent {
  sent: number;
  broken: boolean;
  dirty: boolean;
  stale: boolean;
}

export class Outbound {
  private readonly router: Router;
  private readonly pool: ConnectionPool;
  private readonly watch: OutboundOptions['smarthostWatch'];
  private readonly mtaSts: MtaSts | null;
  private readonly trustedCa: string[] | undefined;

  constructor(config: OutboundConfig, opts: OutboundOptions = {}) {
    this.router = new Router(config);
    this.pool = new ConnectionPool(config.outboundConnectionsPerHost, config.heloName, opts.acquireTimeoutMs);
    this.watch = opts.smarthostWatch;
    this.mtaSts = opts.mtaSts ?? null;
    this.trustedCa = opts.trustedCa;
  }

  /** Where mail for `domain` goes, under the domain's TLS policy (tls-policy.ts). */
  async route(domain: string): Promise<Route> {
    const route = await this.router.route(domain);
    if (route.smarthost || route.failure || !this.mtaSts) return route;
    return applyTlsPolicy(route, await this.mtaSts.policy(domain), this.trustedCa);
  }

  /**
   * Sends `messages` along `route`; from `source` when given, else from the host's default address.
   * `urgent` (transactional mail) is served first when the host's connections are all busy.
   */
  async deliver(
    route: Route,
    messages: OutboundMessage[],
    hooks: DeliverHooks,
    source?: Source | null,
    urgent = false,
  ): Promise<void> {
    if (route.failure) {
      for (const m of messages) await hooks.after(m, route.failure);
      return;
    }
    // Results are recorded while the connection moves on to the next message (and is released
    // without waiting for them): a connection is never held during the caller's bookkeeping.
    const recorded: Promise<void>[] = [];
    const after = (m: OutboundMessage, r: AttemptResult) => void recorded.push(hooks.after(m, r));
    let sendFailed = false;
    let sendError: unknown;
    try {
      await this.sendToTargets(route, messages, hooks.before, after, source ?? null, urgent);
    } catch (err) {
      sendFailed = true;
      sendError = err;
    }
    const failed = (await Promise.allSettled(recorded)).find((r) => r.status === 'rejected');
    if (sendFailed) throw sendError;
    if (failed) throw failed.reason;
  }

  private async sendToTargets(
    route: Route,
    messages: OutboundMessage[],
    before: DeliverHooks['before'],
    after: (m: OutboundMessage, result: AttemptResult) => void,
    source: Source | null,
    urgent: boolean,
  ): Promise<void> {
    let pending = [...messages];
    let lastError: unknown = new Error(`no host to deliver ${route.domain} to`);
    let lastTarget: Target | null = null;
    // A local address reaches only hosts of its own family (an IPv4 pool address dials no IPv6 MX).
    const family = source ? isIP(source.localAddress) : 0;
    const targets = route.targets.filter((t) => family === 0 || isIP(t.host) === 0 || isIP(t.host) === family);
    if (targets.length < route.targets.length && targets.length === 0) {
      lastError = Object.assign(new Error(`no host of ${route.domain} is reachable from ${source!.localAddress}`), {
        code: 'ENOROUTE',
      });
    }
    for (const target of targets) {
      // A stale connection (idle, closed by the server as it was taken) sent nothing: the same
      // host again. Each stale one is closed by then, so this ends, at the latest on a new one.
      let stale = true;
      while (stale && pending.length > 0) {
        let pc: PooledConnection;
        try {
          lastTarget = target;
          pc = await this.pool.acquire(target, source, urgent);
        } catch (err) {
          // Refused, unreachable, bad greeting, a certificate a policy refuses: the next host by
          // preference gets its chance.
          lastError = policyError(target, err);
          if (route.smarthost && (err as { code?: string }).code !== 'EPOOLTIMEOUT') this.watch?.failed(err);
          break;
        }
        // The slot goes back whatever happens while it is held (a `before` hook whose Redis is
        // down, say): a slot kept by a failed delivery would leave `acquire` waiting for ever.
        let outcome: Sent = { sent: 0, broken: true, dirty: true, stale: false };
        try {
          if (route.smarthost && !pc.reused) this.watch?.reached();
          outcome = await this.sendAll(pc, target, pending, before, after);
        } finally {
          await this.pool.release(pc, !outcome.broken, outcome.dirty);
        }
        pending = pending.slice(outcome.sent);
        stale = outcome.stale;
      }
    }
    const failure = connectionFailure(lastError, null);
    for (const m of pending) after(m, lastTarget ? { ...failure, tls: tlsFacts(lastTarget, null) } : failure);
  }

  /**
   * Sends until done or the connection breaks; `sent` counts messages that got a result, `dirty`
   * tells that the last transaction was refused midway (the connection needs an RSET), `stale`
   * that a reused connection turned out closed by the server before its first MAIL FROM was
   * taken (its idle timeout raced our reuse): that message got no result and goes out on
   * another connection; nothing of it was sent.
   */
  private async sendAll(
    pc: PooledConnection,
    target: Target,
    messages: OutboundMessage[],
    before: DeliverHooks['before'],
    after: (m: OutboundMessage, result: AttemptResult) => void,
  ): Promise<Sent> {
    const host = target.host;
    // What the console shows: the MX host's name (the address when it has none) and the session's TLS.
    const via = () => ({ hostName: target.name ?? target.host, tls: tlsFacts(target, pc.conn._socket) });
    let dirty = false;
    let first = true;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (before && !(await before(m))) continue;
      if (isClosed(pc)) return { sent: i, broken: true, dirty, stale: false };
      const reusedFirst = pc.reused && first;
      first = false;
      try {
        if (dirty) await settle<boolean>(pc, (cb) => pc.conn.reset((err, ok) => cb(err ?? null, ok)));
        dirty = false;
        const info = await settle<{ response: string }>(pc, (cb) =>
          pc.conn.send({ from: m.from, to: [m.to] }, m.raw, (err, info) => cb(err ?? null, info)),
        );
        const parsed = parseReply(info.response);
        const reply = parsed.code !== 0 ? parsed : { code: 250, enhanced: null, text: info.response };
        after(m, { ...fromReply(reply, host), ...via() });
      } catch (err) {
        if (reusedFirst && (err as { command?: string }).command === 'MAIL FROM' && isClosed(pc)) {
          return { sent: i, broken: true, dirty: true, stale: true };
        }
        const result: AttemptResult = { ...fromError(err, host), ...via() };
        // No reply means the connection failed mid-transaction: this message is deferred (it
        // may or may not have arrived; a retry errs towards a duplicate over a loss, RFC 5321 §6.1).
        after(m, result);
        if (!result.reply || isClosed(pc)) return { sent: i + 1, broken: true, dirty: true, stale: false };
        dirty = true;
      }
    }
    return { sent: messages.length, broken: false, dirty, stale: false };
  }

  close(): void {
    this.pool.close();
  }
}
