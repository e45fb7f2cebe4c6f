// Opens, clicks and one-click unsubscribes (DESIGN §6). The delivery worker instruments HTML
// and adds List-Unsubscribe with the helpers re-exported here; the web process turns each hit
// into recipient stamps and events. Opens fire `email.opened` once per recipient; every click
// fires `email.clicked` (metrics count a recipient once); an unsubscribe fires once and, on a
// live message, suppresses the address for the sending domain.
import { randomUUID } from 'node:crypto';
import { addSuppression } from './db/suppressions.js';
import { getTrackingTarget, markTracked, type TrackingTarget } from './db/tracking.js';
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

export interface TrackingHit {
  /** False when the message or recipient no longer exists. */
  found: boolean;
  /** True when this hit recorded a new event (false: a repeated open or unsubscribe). */
  recorded: boolean;
}

function eventFor(t: TrackingTarget, type: NewEvent['type'], dedupeKey: string, url?: string): NewEvent {
  return {
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

async function applyHit(tx: TxSql, p: TrackingPayload, t: TrackingTarget): Promise<EventRow[]> {
  const ids = { emailId: t.email_id, recipientId: t.recipient_id };
  switch (p.kind) {
    case 'o': {
      if (t.opened_at) return [];
      await markTracked(tx, { ...ids, event: 'opened' });
      return recordEvents(tx, [eventFor(t, 'email.opened', `${t.recipient_id}:opened`)]);
    }
    case 'c': {
      await markTracked(tx, { ...ids, event: 'clicked' });
      const key = `${t.recipient_id}:clicked:${randomUUID()}`;
      return recordEvents(tx, [eventFor(t, 'email.clicked', key, p.url)]);
    }
    case 'u': {
      if (t.unsubscribed_at) return [];
      await markTracked(tx, { ...ids, event: 'unsubscribed' });
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
export async function recordTrackingHit(deps: TrackingDeps, p: TrackingPayload): Promise<TrackingHit> {
  const outcome = await deps.sql.begin(async (tx) => {
    const target = await getTrackingTarget(tx, p.emailId, p.recipientId);
    if (!target) return { found: false, events: [] as EventRow[] };
    return { found: true, events: await applyHit(tx, p, target) };
  });
  // A failed publication leaves published_at null; the events sweeper re-publishes it.
  await publishEvents(
    deps.sql,
    deps.queues,
    outcome.events.map((e) => e.id),
  );
  return { found: outcome.found, recorded: outcome.events.length > 0 };
}
