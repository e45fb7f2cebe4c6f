// The live path of a delivery: render once (or per recipient when the bytes name the
// recipient), DKIM-sign, route each recipient domain, send with a VERP envelope, and hand every
// recipient's result to `record` as soon as it is known.
import type { DeliveryEmail, DeliveryRecipient } from '../../shared/db/delivery.js';
import { listAttachments, type StoredAttachment } from '../../shared/db/delivery.js';
import { Outbound, type OutboundMessage } from '../../shared/mail/outbound/index.js';
import { providerOf } from '../../shared/mail/providers.js';
import { composeMessage, isPersonal, prepareRawMessage, signDkim, type Tracker } from '../../shared/mail/render.js';
import { verpAddress } from '../../shared/mail/verp.js';
import type { WorkerDeps } from '../deps.js';
import type { RecipientRef } from './record.js';
import type { ProviderThrottle } from './throttle.js';
import { fromAttempt, type Verdict } from './verdict.js';

export type Leased = DeliveryRecipient & { attempts: number };
export type Recorder = (r: RecipientRef, v: Verdict) => Promise<void>;

export interface LiveContext {
  deps: WorkerDeps;
  outbound: Outbound;
  throttle: ProviderThrottle;
  tracker: Tracker;
}

function ref(r: Leased, provider: string | null): RecipientRef {
  return { id: r.id, email: r.email, attempts: r.attempts, provider };
}

/** Builds the signed bytes for one recipient (or for all, with `recipientId` null). */
export function makeRenderer(deps: WorkerDeps, tracker: Tracker, email: DeliveryEmail) {
  const opens = email.domain_track_opens ?? email.org_track_opens;
  const clicks = email.domain_track_clicks ?? email.org_track_clicks;
  const common = {
    fromDomain: email.domain_name,
    baseUrl: deps.config.baseUrl,
    secret: deps.config.secretKey,
    opens,
    clicks,
    unsubscribe: email.topic_id !== null || email.source === 'broadcast',
  };
  const key = { domain: email.domain_name, selector: email.dkim_selector, privateKey: email.dkim_private_key ?? '' };
  // Relay messages are delivered as their client wrote them: no rewriting, so one copy for all.
  const personal = email.raw_mime === null && isPersonal(common, email.html);
  let attachments: Promise<StoredAttachment[]> | null = null;
  let shared: Promise<Buffer> | null = null;
  const render = async (recipientId: string | null): Promise<Buffer> => {
    if (email.raw_mime !== null) return await signDkim(prepareRawMessage(email.raw_mime, email.message_id), key);
    attachments ??= email.has_attachments ? listAttachments(deps.sql, email.id) : Promise.resolve([]);
    const p = recipientId && personal ? { ...common, recipientId, tracker } : null;
    return await signDkim(await composeMessage(email, await attachments, p), key);
  };
  return (recipientId: string): Promise<Buffer> => {
    if (personal) return render(recipientId);
    shared ??= render(null);
    return shared;
  };
}

export async function deliverLive(ctx: LiveContext, email: DeliveryEmail, leased: Leased[], record: Recorder) {
  const { deps } = ctx;
  if (!email.dkim_private_key) {
    for (const r of leased) {
      await record(ref(r, r.provider), { kind: 'failed', response: 'no DKIM key', detail: 'no DKIM key' });
    }
    return;
  }
  const renderFor = makeRenderer(deps, ctx.tracker, email);
  const byDomain = new Map<string, Leased[]>();
  for (const r of leased) byDomain.set(r.domain, [...(byDomain.get(r.domain) ?? []), r]);
  await Promise.all(
    [...byDomain].map(async ([domain, rs]) => {
      const route = await ctx.outbound.route(domain);
      const provider = providerOf(domain, route.mxHosts).id;
      const messages: OutboundMessage[] = [];
      for (const r of rs) {
        try {
          const raw = await renderFor(r.id);
          messages.push({
            id: r.id,
            from: verpAddress(r.id, email.domain_name, deps.config.secretKey),
            to: r.email,
            raw,
          });
        } catch (err) {
          deps.logger.error({ event: 'DELIVERY_RENDER_FAILED', emailId: email.id, err }, 'render failed');
          const why = `render error: ${(err as Error).message}`.slice(0, 500);
          await record(ref(r, provider), { kind: 'failed', response: why, detail: why });
        }
      }
      const byId = new Map(rs.map((r) => [r.id, r]));
      await ctx.outbound.deliver(route, messages, {
        before: async (m) => {
          if (await ctx.throttle.take(provider)) return true;
          const response = `provider ${provider} throttled: waiting for its rate to recover`;
          const v: Verdict = { kind: 'deferred', response, detail: 'Undetermined', blocked: false, throttle: true };
          await record(ref(byId.get(m.id)!, provider), v);
          return false;
        },
        after: async (m, result) => {
          if (result.classification.throttle || result.classification.blocked) await ctx.throttle.slow(provider);
          await record(ref(byId.get(m.id)!, provider), fromAttempt(result));
        },
      });
    }),
  );
}
