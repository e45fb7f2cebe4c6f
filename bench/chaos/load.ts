// The steady load of the fault suite: one message a tick, alternating `POST /emails` and the SMTP
// relay, each to its own recipient and with its own send key in an `X-Chaos-Send` header (the
// sink records it, so any send can be looked for at the sink, answered or not), and every two
// seconds a broadcast to 10 contacts of its own (bench/chaos/broadcast.ts; each recipient counts
// as a send). Every send ends in one of four outcomes:
//   accepted       Tern answered success (202 / 250): it must be delivered once
//   refused        Tern answered a refusal (4xx/5xx, SMTP 4xx/5xx): by contract not stored
//   not connected  the connection itself was refused (the process was down): never reached Tern
//   unconfirmed    no answer (the process died or hung mid-request): may or may not be stored
// Nothing is retried, so nothing is sent twice by the load.
import nodemailer, { type Transporter } from 'nodemailer';
import type postgres from 'postgres';
import { BROADCAST_EVERY_TICKS, sendBroadcast } from './broadcast.js';
import { SEND_KEY_HEADER } from './sink.js';
import type { ChaosStack } from './stack.js';

export type Outcome = 'accepted' | 'refused' | 'not-connected' | 'unconfirmed';

export interface Send {
  /** `<run>-<n>`, lower case: the value of the X-Chaos-Send header. */
  key: string;
  /** The index of the fault phase the send was made in. */
  phase: number;
  startedAt: number;
  /** Null while the send waits for its answer. */
  outcome: Outcome | null;
  answeredAt: number | null;
}

/** Requests the load keeps open at most: beyond, a tick is skipped (the install is down). */
export const MAX_IN_FLIGHT = 200;
/** How long a send waits for Tern's answer. */
const ANSWER_TIMEOUT_MS = 15_000;

function connectionRefused(err: unknown): boolean {
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  return e.code === 'ECONNREFUSED' || e.cause?.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(e.message ?? '');
}

export class Load {
  readonly sends: Send[] = [];
  /** Error kinds seen (for the report), with how many times each. */
  readonly errors = new Map<string, number>();
  /** Ticks skipped because MAX_IN_FLIGHT requests were open. */
  skipped = 0;
  private timer: NodeJS.Timeout | null = null;
  private phase = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly relay: Transporter;
  private readonly run = Date.now().toString(36);
  private ticks = 0;

  constructor(
    private readonly stack: ChaosStack,
    private readonly perSecond: number,
    private readonly sql: postgres.Sql,
  ) {
    this.relay = nodemailer.createTransport({
      host: '127.0.0.1',
      port: stack.relayPort,
      secure: false,
      pool: true,
      maxConnections: 4,
      auth: { user: stack.org.keyId, pass: stack.org.token },
      tls: { rejectUnauthorized: false },
      connectionTimeout: 5000,
      socketTimeout: ANSWER_TIMEOUT_MS,
    });
  }

  /** Starts (or goes on) sending; the sends made from now on belong to `phase`. */
  start(phase: number): void {
    this.phase = phase;
    this.timer ??= setInterval(() => this.tick(), 1000 / this.perSecond);
  }

  /** Stops sending and waits for the sends in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inFlight]);
  }

  close(): void {
    this.relay.close();
  }

  private tick(): void {
    if (this.inFlight.size >= MAX_IN_FLIGHT) {
      this.skipped++;
      return;
    }
    if (++this.ticks % BROADCAST_EVERY_TICKS === 0) this.broadcast();
    const n = this.sends.length + 1;
    const send: Send = {
      key: `${this.run}-${n}`,
      phase: this.phase,
      startedAt: Date.now(),
      outcome: null,
      answeredAt: null,
    };
    this.sends.push(send);
    const p = (n % 2 === 0 ? this.viaApi(send, n) : this.viaRelay(send, n))
      .then((outcome) => {
        send.outcome = outcome;
        send.answeredAt = Date.now();
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** One broadcast; its recipients become sends once its send request is answered. */
  private broadcast(): void {
    const phase = this.phase;
    const startedAt = Date.now();
    const p = sendBroadcast(this.stack, this.sql, `${this.run}-${this.ticks}`)
      .then((r) => {
        if (r.error) this.count(r.error);
        if (!r.outcome) return;
        for (const key of r.recipients) {
          this.sends.push({ key, phase, startedAt, outcome: r.outcome, answeredAt: Date.now() });
        }
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private count(kind: string): void {
    this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
  }

  private async viaApi(send: Send, n: number): Promise<Outcome> {
    const { org } = this.stack;
    try {
      const res = await fetch(`${this.stack.apiUrl}/emails`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          from: `Chaos <load@${org.domain}>`,
          to: [`api-${send.key}@dest.test`],
          subject: `chaos ${n}`,
          text: `message ${n}`,
          headers: { [SEND_KEY_HEADER]: send.key },
        }),
        signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
      });
      await res.arrayBuffer();
      if (res.ok) return 'accepted';
      this.count(`api: ${res.status}`);
      return 'refused';
    } catch (err) {
      const e = err as { name?: string; message?: string; cause?: { code?: string } };
      this.count(`api: ${e.cause?.code ?? e.name ?? ''} ${(e.message ?? '').slice(0, 60)}`);
      return connectionRefused(err) ? 'not-connected' : 'unconfirmed';
    }
  }

  private async viaRelay(send: Send, n: number): Promise<Outcome> {
    const { org } = this.stack;
    try {
      await this.relay.sendMail({
        from: `load@${org.domain}`,
        to: `relay-${send.key}@dest.test`,
        subject: `chaos ${n}`,
        text: `message ${n}`,
        messageId: `<relay-${send.key}@${org.domain}>`,
        headers: { [SEND_KEY_HEADER]: send.key },
      });
      return 'accepted';
    } catch (err) {
      const e = err as { code?: string; message?: string; responseCode?: number };
      this.count(`relay: ${e.code ?? ''} ${(e.message ?? '').slice(0, 80)}`);
      if (typeof e.responseCode === 'number') return 'refused';
      return connectionRefused(err) ? 'not-connected' : 'unconfirmed';
    }
  }
}
