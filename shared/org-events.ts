// Organization events (DESIGN §15; docs/webhooks.md "Organization events"): about the
// organization rather than a message — sending paused or resumed, a webhook endpoint disabled
// after failing, a domain's DNS check failing or passing again. Each is one row of the event log
// (`data` holds its fields), fanned out like email.* events to the endpoints that subscribe to
// its type; the fan-out also emails the organization's admins (workers/org-event-mail.ts).
import { publishEvents, recordEvents, type OrgEventType } from './events.js';
import { newId } from './ids.js';
import type { Db } from './db/pool.js';
import type { Queues } from './queues.js';

export interface OrgEvent {
  orgId: string;
  type: OrgEventType;
  /** The event's `data` besides `organization_id` (which is always first). */
  data: Record<string, unknown>;
  domainId?: string | null;
}

/** Records the event (in `db`, which may be the transaction of the change it describes). */
export async function recordOrgEvent(db: Db, ev: OrgEvent): Promise<string | null> {
  const id = newId('evt');
  const [row] = await recordEvents(db, [
    {
      orgId: ev.orgId,
      mode: 'live',
      type: ev.type,
      dedupeKey: `${ev.type}:${id}`,
      domainId: ev.domainId ?? null,
      data: { organization_id: ev.orgId, ...ev.data },
    },
  ]);
  return row?.id ?? null;
}

/**
 * Records and publishes the event. Publishing only wakes the fan-out sooner: an event whose
 * wake-up fails is still drained by the fan-out's timer, so a Redis error here is swallowed.
 */
export async function fireOrgEvent(
  deps: { sql: Db; queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'> },
  ev: OrgEvent,
): Promise<string | null> {
  const id = await recordOrgEvent(deps.sql, ev);
  if (id) await publishEvents(deps.sql, deps.queues, [id]).catch(() => undefined);
  return id;
}
