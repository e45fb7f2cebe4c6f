// Custom events posted through POST /events (DESIGN §5 "Events and automations"), kept apart
// from the message event log (`events`). Rows with consumed_at null wait for the automation
// engine, which marks them consumed once it has started the runs they trigger.
import type { Mode } from '../keys.js';
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

export interface ContactEventRow {
  id: string;
  org_id: string;
  contact_id: string;
  name: string;
  properties: Record<string, unknown>;
  key_id: string | null;
  mode: Mode;
  created_at: Date;
  consumed_at: Date | null;
}

export async function insertContactEvent(
  db: Db,
  e: { orgId: string; contactId: string; name: string; properties: Record<string, unknown>; keyId: string; mode: Mode },
): Promise<ContactEventRow> {
  const [row] = await db<ContactEventRow[]>`
    insert into contact_events (id, org_id, contact_id, name, properties, key_id, mode)
    values (${newId('evt')}, ${e.orgId}, ${e.contactId}, ${e.name}, ${jsonParam(db, e.properties)}::jsonb,
            ${e.keyId}, ${e.mode})
    returning *`;
  return row!;
}

/** Events not yet consumed by the automation engine, oldest first. */
export async function pendingContactEvents(db: Db, limit: number): Promise<ContactEventRow[]> {
  return await db<ContactEventRow[]>`
    select * from contact_events where consumed_at is null order by id asc limit ${limit}`;
}

export async function markContactEventsConsumed(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db`update contact_events set consumed_at = now() where id = any(${ids}) and consumed_at is null`;
}
