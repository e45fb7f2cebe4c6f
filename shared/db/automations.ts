// Automations and their runs (DESIGN §5 "Events and automations"). A run is unique per
// automation, contact and trigger occurrence, so a scan that runs twice starts nothing twice; a
// run moves one step at a time with a conditional update on the step it leaves, so a step job
// that runs twice does its step once.
import { newId } from '../ids.js';
import type { Mode } from '../keys.js';
import { pagedRows } from './contacts.js';
import type { Page } from './emails.js';
import type { Db } from './pool.js';

export type AutomationStep =
  { wait: string } | { send: { template: string; kind?: string; from: string; subject?: string } };

export type AutomationTrigger = { event: string } | { contact_created: true };

export interface AutomationRow {
  id: string;
  org_id: string;
  name: string;
  trigger_type: 'event' | 'contact_created';
  trigger_event: string | null;
  steps: AutomationStep[];
  status: 'enabled' | 'disabled';
  created_by_key_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export type RunStatus = 'active' | 'completed' | 'stopped' | 'failed';

export interface RunRow {
  id: string;
  automation_id: string;
  org_id: string;
  contact_id: string;
  occurrence: string;
  mode: Mode;
  steps: AutomationStep[];
  context: Record<string, unknown>;
  step: number;
  status: RunStatus;
  next_at: Date | null;
  email_ids: string[];
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

function triggerColumns(t: AutomationTrigger) {
  return 'event' in t
    ? { trigger_type: 'event' as const, trigger_event: t.event }
    : { trigger_type: 'contact_created' as const, trigger_event: null };
}

export async function insertAutomation(
  db: Db,
  a: {
    orgId: string;
    name: string;
    trigger: AutomationTrigger;
    steps: AutomationStep[];
    status: string;
    keyId: string;
  },
): Promise<AutomationRow> {
  const t = triggerColumns(a.trigger);
  const [row] = await db<AutomationRow[]>`
    insert into automations (id, org_id, name, trigger_type, trigger_event, steps, status, created_by_key_id)
    values (${newId('aut')}, ${a.orgId}, ${a.name}, ${t.trigger_type}, ${t.trigger_event},
            ${db.json(a.steps as never)}::jsonb, ${a.status}, ${a.keyId})
    returning *`;
  return row!;
}

export async function findAutomation(db: Db, orgId: string, id: string): Promise<AutomationRow | null> {
  const [row] = await db<AutomationRow[]>`select * from automations where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

export async function listAutomations(db: Db, orgId: string, page: Page): Promise<AutomationRow[]> {
  return await pagedRows<AutomationRow>(
    db,
    page,
    (cursor, order, limit) => db<AutomationRow[]>`
      select * from automations where org_id = ${orgId} ${cursor} ${order} limit ${limit}`,
  );
}

export async function updateAutomation(
  db: Db,
  orgId: string,
  id: string,
  p: {
    name?: string | undefined;
    trigger?: AutomationTrigger | undefined;
    steps?: AutomationStep[] | undefined;
    status?: string | undefined;
  },
): Promise<AutomationRow | null> {
  const t = p.trigger ? triggerColumns(p.trigger) : null;
  const [row] = await db<AutomationRow[]>`
    update automations set
      name = ${p.name === undefined ? db`name` : db`${p.name}`},
      trigger_type = ${t ? db`${t.trigger_type}` : db`trigger_type`},
      trigger_event = ${t ? db`${t.trigger_event}` : db`trigger_event`},
      steps = ${p.steps === undefined ? db`steps` : db`${db.json(p.steps as never)}::jsonb`},
      status = ${p.status === undefined ? db`status` : db`${p.status}`},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function deleteAutomation(db: Db, orgId: string, id: string): Promise<AutomationRow | null> {
  const [row] = await db<AutomationRow[]>`delete from automations where org_id = ${orgId} and id = ${id} returning *`;
  return row ?? null;
}

export async function listRuns(db: Db, automationId: string, page: Page): Promise<RunRow[]> {
  return await pagedRows<RunRow>(
    db,
    page,
    (cursor, order, limit) => db<RunRow[]>`
      select * from automation_runs where automation_id = ${automationId} ${cursor} ${order} limit ${limit}`,
  );
}

// ---- the engine (worker side) ----

/** Enabled automations of these organizations (the scan matches them against its triggers). */
export async function enabledAutomations(db: Db, orgIds: string[]): Promise<AutomationRow[]> {
  if (orgIds.length === 0) return [];
  return await db<AutomationRow[]>`
    select * from automations where org_id = any(${orgIds}) and status = 'enabled' order by id`;
}

export interface CreatedContact {
  id: string;
  org_id: string;
  /** The mode of the key that created the contact (live when none is known). */
  mode: Mode;
}

/** Contacts whose creation the engine has not looked at yet, oldest first. */
export async function pendingCreatedContacts(db: Db, limit: number): Promise<CreatedContact[]> {
  return await db<CreatedContact[]>`
    select c.id, c.org_id, coalesce(k.mode, 'live') as mode
    from contacts c left join api_keys k on k.id = c.created_by_key_id
    where c.automations_seen_at is null and c.automations_on_create
    order by c.id limit ${limit}`;
}

export async function markContactsSeen(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db`update contacts set automations_seen_at = now() where id = any(${ids}) and automations_seen_at is null`;
}

/** Serialises scans across worker processes; false when another holds the lock. */
export async function tryScanLock(db: Db): Promise<boolean> {
  const [row] = await db<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtext('tern:automation-scan')) as ok`;
  return row!.ok;
}

export type NewRun = Pick<
  RunRow,
  'automation_id' | 'org_id' | 'contact_id' | 'occurrence' | 'mode' | 'steps' | 'context'
>;

/** Starts runs; those of an occurrence already started are skipped. Returns the new run ids. */
export async function insertRuns(db: Db, runs: NewRun[]): Promise<string[]> {
  if (runs.length === 0) return [];
  const rows = runs.map((r) => ({
    ...r,
    id: newId('run'),
    steps: db.json(r.steps as never),
    context: db.json(r.context as never),
    next_at: new Date(),
  }));
  const inserted = await db<{ id: string }[]>`
    insert into automation_runs ${db(rows as never)}
    on conflict (automation_id, contact_id, occurrence) do nothing
    returning id`;
  return inserted.map((r) => r.id);
}

/** The run, locked, with its automation's status now. */
export async function lockRun(db: Db, id: string): Promise<(RunRow & { automation_status: string }) | null> {
  const [row] = await db<(RunRow & { automation_status: string })[]>`
    select r.*, a.status as automation_status
    from automation_runs r join automations a on a.id = r.automation_id
    where r.id = ${id} for update of r`;
  return row ?? null;
}

/** Leaves step `from`; false when the run is no longer active at that step. */
export async function advanceRun(
  db: Db,
  id: string,
  from: number,
  p: { step: number; status: RunStatus; nextAt: Date | null; emailId?: string; error?: string },
): Promise<boolean> {
  const rows = await db`
    update automation_runs set
      step = ${p.step},
      status = ${p.status},
      next_at = ${p.nextAt},
      email_ids = ${p.emailId ? db`array_append(email_ids, ${p.emailId}::text)` : db`email_ids`},
      last_error = ${p.error ?? null},
      updated_at = now()
    where id = ${id} and step = ${from} and status = 'active'
    returning id`;
  return rows.length > 0;
}

/** Active runs due this long ago: their step job may have been lost. */
export async function stalledRuns(db: Db, graceSeconds: number, limit: number) {
  return await db<Pick<RunRow, 'id' | 'step'>[]>`
    select id, step from automation_runs
    where status = 'active' and next_at <= now() - make_interval(secs => ${graceSeconds})
    order by next_at limit ${limit}`;
}
