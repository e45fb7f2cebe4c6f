// Opens, clicks and one-click unsubscribes (DESIGN §6, §20). The delivery worker instruments HTML
// and adds List-Unsubscribe with the helpers re-exported here; the web process turns each hit
// into recipient stamps and events. Each open and click is judged a person's or a machine's
// (shared/engagement/machine.ts): only a person's stamps the recipient's opened_at/clicked_at.
// Opens fire `email.opened` once per recipient for people and once for machines; every click
// fires `email.clicked` (metrics count a recipient once); an unsubscribe fires once and, on a
// live message, suppresses the address for the sending domain.
import { randomUUID } from 'node:crypto';
import { broadcastOfEmail } from './db/broadcasts.js';
import { updateContact } from './db/contacts.js';
import { addSuppression } from './db/suppressions.js';
import { setSubscriptions } from './db/topics.js';
import { getTrackingTarget, markTracked, otherLinkClicks, type TrackingTarget } from './db/tracking.js';
import { judgeHit, type Verdict } from './engagement/machine.js';
import { LINK_BURST_MS } from './engagement/machine-sources.js';
import type { Sql, TxSql } from './db/pool.js';
import { publishEvents, recordEvents, type EventRow, type NewEvent } from './events.js';
import type { Queues } from './queues.js';
import type { TrackingPayload } from './mail/tracking-links.js';

export {
  clickUrl,
  isHttpUrl,
  listUnsubscribeHeaders,
  openPixelUrl,
  signTrackingToken,
  unsubscribeUrl,
  verifyTrackingToken,
  type LinkParams,
  type TrackingKind,
  type TrackingPayload,
} from './mail/tracking-links.js';
export { instrumentHtml, type InstrumentOptions } from './mail/instrument-html.js';

/** Effective tracking for a message: the domain's flag when set, else the organization default. */
export function trackingEnabled(
  org: { track_opens: boolean; track_clicks: boolean },
  domain: { track_opens: boolean | null; track_clicks: boolean | null },
): { opens: boolean; clicks: boolean } {
  return { opens: domain.track_opens ?? org.track_opens, clicks: domain.track_clicks ?? org.track_clicks };
}

export interface TrackingDeps {
  sql: Sql;
  queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>;
}

/** What the request says about who made it (for opens and clicks). */
export interface HitRequest {
  method: string;
  /** The client address: the socket's, or X-Forwarded-For's under TRUST_PROXY. */
  ip: string;
  userAgent: string;
}

export interface TrackingHit {
  /** False when the message or recipient no longer exists. */
  found: boolean;
  /** True when this hit recorded a new event (false: a repeated open or unsubscribe). */
  recorded: boolean;
}

function eventFor(
  t: TrackingTarget,
  type: NewEvent['type'],
  dedupeKey: string,
  url?: string,
  verdict?: Verdict,
): NewEvent {
  return {
    ...(verdict ? { data: { machine: verdict.machine, machine_reason: verdict.machine_reason } } : {}),
    orgId: t.org_id,
    mode: t.mode,
    type,
    dedupeKey,
    emailId: t.email_id,
    recipientId: t.recipient_id,
    recipient: t.recipient,
    url: url ?? null,
    domainId: t.domain_id,
    keyId: t.key_id,
    templateId: t.template_id,
    kind: t.kind,
    provider: t.provider,
  };
}

/** Opts the broadcast's contact out of its topic, or out of all broadcasts; false when none. */
async function unsubscribeBroadcastContact(tx: TxSql, orgId: string, emailId: string): Promise<boolean> {
  const target = await broadcastOfEmail(tx, emailId);
  if (!target) return false;
  if (target.topic_id) {
    await setSubscriptions(tx, target.contact_id, [{ topicId: target.topic_id, subscription: 'opt_out' }]);
  } else {
    await updateContact(tx, orgId, target.contact_id, { unsubscribed: true });
  }
  return true;
}

/** An unsubscribe has no request signals to judge: a neutral one. */
const NO_REQUEST: HitRequest = { method: 'POST', ip: '', userAgent: '' };

function signals(req: HitRequest, t: TrackingTarget, at: Date) {
  return { method: req.method, ip: req.ip, userAgent: req.userAgent, at, deliveredAt: t.delivered_at };
}

async function applyHit(tx: TxSql, p: TrackingPayload, t: TrackingTarget, req: HitRequest): Promise<EventRow[]> {
  const ids = { emailId: t.email_id, recipientId: t.recipient_id };
  switch (p.kind) {
    case 'o': {
      const verdict = judgeHit({ ...signals(req, t, new Date()), kind: 'open', otherLinkClicks: [] });
      // One email.opened per recipient for people and one for machines.
      if (verdict.machine) {
        const key = `${t.recipient_id}:opened:machine`;
        return recordEvents(tx, [eventFor(t, 'email.opened', key, undefined, verdict)]);
      }
      if (t.opened_at) return [];
      await markTracked(tx, { ...ids, event: 'opened' });
      return recordEvents(tx, [eventFor(t, 'email.opened', `${t.recipient_id}:opened`, undefined, verdict)]);
    }
    case 'c': {
      const at = new Date();
      const others = await otherLinkClicks(tx, t.recipient_id, p.url ?? '', new Date(at.getTime() - LINK_BURST_MS));
      const verdict = judgeHit({ ...signals(req, t, at), kind: 'click', otherLinkClicks: others });
      if (!verdict.machine) await markTracked(tx, { ...ids, event: 'clicked' });
      const key = `${t.recipient_id}:clicked:${randomUUID()}`;
      return recordEvents(tx, [{ ...eventFor(t, 'email.clicked', key, p.url, verdict), createdAt: at }]);
    }
    case 'u': {
      if (t.unsubscribed_at) return [];
      await markTracked(tx, { ...ids, event: 'unsubscribed' });
      // A broadcast's unsubscribe is the contact's choice (its topic, else every broadcast), not
      // a suppression that would also stop the domain's transactional mail.
      if (
        t.mode === 'live' &&
        t.source === 'broadcast' &&
        (await unsubscribeBroadcastContact(tx, t.org_id, t.email_id))
      ) {
        return recordEvents(tx, [eventFor(t, 'email.unsubscribed', `${t.recipient_id}:unsubscribed`)]);
      }
      if (t.mode === 'live') {
        // Scoped to the sending domain; an existing row of that scope (any reason) stays as it is.
        await addSuppression(tx, {
          orgId: t.org_id,
          email: t.recipient,
          domainId: t.domain_id,
          reason: 'unsubscribe',
          sourceEmailId: t.email_id,
        });
      }
      return recordEvents(tx, [eventFor(t, 'email.unsubscribed', `${t.recipient_id}:unsubscribed`)]);
    }
  }
}

/** Records a verified tracking hit: stamps, event, suppression in one transaction, then publishes. */
export async function recordTrackingHit(
  deps: TrackingDeps,
  p: TrackingPayload,
  req: HitRequest = NO_REQUEST,
): Promise<TrackingHit> {
  const outcome = await deps.sql.begin(async (tx) => {
    const target = await getTrackingTarget(tx, p.emailId, p.recipientId);
    if (!target) return { found: false, events: [] as EventRow[] };
    return { found: true, events: await applyHit(tx, p, target, req) };
  });
  // A failed publication leaves published_at null; the events sweeper re-publishes it.
  await publishEvents(
    deps.sql,
    deps.queues,
    outcome.events.map((e) => e.id),
  );
  return { found: outcome.found, recorded: outcome.events.length > 0 };
}
