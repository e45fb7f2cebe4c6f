// The live path of a delivery: render once (or per recipient when the bytes name the
// recipient), DKIM-sign, route each recipient domain, send with a VERP envelope, and hand every
// recipient's result to `record` as soon as it is known. Each SMTP attempt (and each recipient
// failed before SMTP) counts in tern_delivery_attempts_total; each 250 in
// tern_delivery_latency_seconds.
import type { DeliveryEmail, DeliveryRecipient } from '../../shared/db/delivery.js';
import { releaseAttempts } from '../../shared/db/delivery-attempts.js';
import { Outbound, type OutboundMessage } from '../../shared/mail/outbound/index.js';
import { providerOf } from '../../shared/mail/providers.js';
import { demoDomainMessage } from '../../shared/domains/demo.js';
import { messageRenderer } from '../../shared/mail/message-renderer.js';
import type { Tracker } from '../../shared/mail/render.js';
import { verpAddress } from '../../shared/mail/verp.js';
import { streamOf } from '../../shared/prom/labels.js';
import type { WorkerDeps } from '../deps.js';
import type { RecipientRef } from './record.js';
import type { DeliveryJournal } from './journal.js';
import type { ProviderThrottle } from './throttle.js';
import { fromAttempt, type Verdict } from './verdict.js';

/** Retry delay of a recipient deferred by a fault of Tern's own (its Redis away), not the receiver's. */
export const LOCAL_FAULT_RETRY_SECONDS = 5;

export type Leased = DeliveryRecipient & { attempts: number };
export type Recorder = (r: RecipientRef, v: Verdict) => Promise<void>;

export interface LiveContext {
  deps: WorkerDeps;
  outbound: Outbound;
  throttle: ProviderThrottle;
  tracker: Tracker;
  journal: DeliveryJournal;
  /**
   * Whether this run still certainly holds the attempts it leased (workers/delivery/leases.ts);
   * checked just before each message goes out. Absent: always.
   */
  holds?: () => boolean;
  /**
   * Whether the process is stopping (SIGTERM): a message not yet on its way is handed back (its
   * attempt released, due again at once for another process) instead of sent. Absent: never.
   */
  stopping?: () => boolean;
  /** The lease holder token of this run (workers/delivery/leases.ts), whose attempts a stopping run releases. */
  holder?: string;
}

/** Journals a server's acceptance at once (a journal that cannot be written costs nothing but the journal). */
function journalAccepted(ctx: LiveContext, r: Leased, response: string): void {
  try {
    ctx.journal.accepted(r.id, r.attempts, response);
  } catch (err) {
    ctx.deps.logger.warn(
      { event: 'DELIVERY_JOURNAL_FAILED', recipientId: r.id, err },
      'could not journal an acceptance',
    );
  }
}

function ref(r: Leased, provider: string | null): RecipientRef {
  return { id: r.id, email: r.email, attempts: r.attempts, provider };
}

/** Counts an attempt's outcome; a 250 also records the time since acceptance (or the scheduled time). */
function countAttempt(deps: WorkerDeps, email: DeliveryEmail, provider: string | null, outcome: string): void {
  // `pool`: the message's IP pool, `default` for the host's own address.
  deps.prom.inc('tern_delivery_attempts_total', [outcome, provider ?? 'other', email.pool?.name ?? 'default']);
  if (outcome !== 'delivered') return;
  const since = (email.scheduled_at ?? email.created_at).getTime();
  deps.prom.observe(
    'tern_delivery_latency_seconds',
    [email.stream ?? streamOf(email.source)],
    Math.max(0, Date.now() - since) / 1000,
  );
}

/** Builds the signed bytes for one recipient (shared/mail/message-renderer.ts). */
export function makeRenderer(deps: WorkerDeps, tracker: Tracker, email: DeliveryEmail) {
  const renderer = messageRenderer(deps, tracker, email);
  return (recipientId: string): Promise<Buffer> => renderer.forRecipient(recipientId);
}

/**
 * Sends each recipient from its source address (`sourceOf`: a pool address, null for the host's
 * default), grouped by recipient domain and source: a connection carries one source's mail only.
 */
export async function deliverLive(
  ctx: LiveContext,
  email: DeliveryEmail,
  leased: Leased[],
  record: Recorder,
  sourceOf: (recipientId: string) => string | null = () => null,
) {
  const { deps } = ctx;
  // The demo domain never leaves the machine (the API refuses such sends; this is the backstop).
  const refusal = email.domain_demo
    ? demoDomainMessage(email.domain_name)
    : !email.dkim_private_key
      ? 'no DKIM key'
      : null;
  if (refusal) {
    for (const r of leased) {
      countAttempt(deps, email, r.provider, 'failed');
      await record(ref(r, r.provider), { kind: 'failed', response: refusal, detail: refusal });
    }
    return;
  }
  const renderFor = makeRenderer(deps, ctx.tracker, email);
  // Attempts not sent because this run's lease may have run out (the process was stopped past
  // it): another job may hold them now. Nothing is recorded for them; their holder, or the
  // sweeper once the lease is over, sends them.
  let lapsed = 0;
  const handedBack: string[] = [];
  const groups = new Map<string, { domain: string; address: string | null; rs: Leased[] }>();
  for (const r of leased) {
    const address = sourceOf(r.id);
    const key = `${r.domain} ${address ?? ''}`;
    const group = groups.get(key) ?? { domain: r.domain, address, rs: [] };
    group.rs.push(r);
    groups.set(key, group);
  }
  await Promise.all(
    [...groups.values()].map(async ({ domain, address, rs }) => {
      const source = address ? { localAddress: address, ehlo: email.pool?.ehlo ?? null } : null;
      const route = await ctx.outbound.route(domain);
      const provider = providerOf(domain, route.mxHosts).id;
      const messages: OutboundMessage[] = [];
      for (const r of rs) {
        try {
          const raw = await renderFor(r.id);
          messages.push({
            id: r.id,
            from: email.envelope_from ?? verpAddress(r.id, email.domain_name, deps.config.secretKey),
            to: r.email,
            raw,
          });
        } catch (err) {
          deps.logger.error({ event: 'DELIVERY_RENDER_FAILED', emailId: email.id, err }, 'render failed');
          const why = `render error: ${(err as Error).message}`.slice(0, 500);
          countAttempt(deps, email, provider, 'failed');
          await record(ref(r, provider), { kind: 'failed', response: why, detail: why });
        }
      }
      const byId = new Map(rs.map((r) => [r.id, r]));
      await ctx.outbound.deliver(
        route,
        messages,
        {
          before: async (m) => {
            if (ctx.stopping?.()) {
              handedBack.push(m.id);
              return false;
            }
            if (ctx.holds && !ctx.holds()) {
              if (lapsed++ === 0) {
                deps.logger.warn(
                  { event: 'DELIVERY_LEASE_LAPSED', emailId: email.id },
                  'attempt lease ran out while this run waited (the process was stopped?): left to their new holder',
                );
              }
              return false;
            }
            let response: string;
            try {
              if (await ctx.throttle.take(provider, address)) return true;
              response = `provider ${provider} throttled: waiting for its rate to recover`;
            } catch (err) {
              // The pacing lives in Redis: while Redis is away nothing was sent, so the recipient
              // waits a short while (a local fault, not the recipient's), and the slot moves on.
              deps.logger.warn(
                { event: 'DELIVERY_THROTTLE_UNAVAILABLE', provider, err },
                'provider pacing unavailable',
              );
              response = `provider pacing unavailable (${(err as Error).message ?? String(err)})`.slice(0, 500);
              const v: Verdict = {
                kind: 'deferred',
                response,
                detail: 'Undetermined',
                blocked: false,
                throttle: true,
                retryInSeconds: LOCAL_FAULT_RETRY_SECONDS,
              };
              await record(ref(byId.get(m.id)!, provider), v);
              return false;
            }
            const v: Verdict = { kind: 'deferred', response, detail: 'Undetermined', blocked: false, throttle: true };
            await record(ref(byId.get(m.id)!, provider), v);
            return false;
          },
          after: async (m, result) => {
            // First, before any wait: a worker killed from here on is not followed by a re-send.
            if (result.kind === 'delivered') journalAccepted(ctx, byId.get(m.id)!, result.response);
            if (result.classification.throttle || result.classification.blocked) {
              // A Redis away must not cost the result (a 250 not recorded is sent again).
              await ctx.throttle.slow(provider, address).catch((err: unknown) => {
                deps.logger.warn(
                  { event: 'DELIVERY_THROTTLE_UNAVAILABLE', provider, err },
                  'could not slow the provider',
                );
              });
            }
            countAttempt(deps, email, provider, result.kind);
            await record(ref(byId.get(m.id)!, provider), fromAttempt(result));
          },
        },
        source,
        // Transactional mail goes ahead of broadcast mail waiting for the same host's connections.
        (email.stream ?? streamOf(email.source)) === 'transactional',
      );
    }),
  );
  if (handedBack.length > 0 && ctx.holder) {
    const n = await releaseAttempts(deps.sql, handedBack, ctx.holder);
    deps.logger.info({ emailId: email.id, recipients: n }, 'stopping: attempts not started handed back');
  }
}
