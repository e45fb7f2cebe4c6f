// Automations and their runs (DESIGN §5 "Events and automations"). A run is unique per
// automation, contact and trigger occurrence, so a scan that runs twice starts nothing twice; a
// run moves one step at a time with a conditional update on the step it leaves, so a step job
// that runs twice does its step once.
import type { PendingQuery, Row } from 'postgres';
import { newId } from '../ids.js';
import type { Mode } from '../keys.js';
import type { Condition } from '../automation-steps.js';
import { parseWait } from '../durations.js';
import { pagedRows, type ContactRow } from './contacts.js';
import { filterCondition, membershipCondition, type SegmentRow } from './segments.js';
import { suppressionReasonSql } from './suppressions.js';
import type { Page } from './emails.js';
import type { Db } from './pool.js';
import { unnestRows, type ColumnSpec } from './unnest.js';

import type { AutomationStep } from '../automation-steps.js';
import { jsonParam } from './params.js';
export type { AutomationStep } from '../automation-steps.js';

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

export type RunStatus = 'active' | 'completed' | 'stopped' | 'failed' | 'exited';

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
  /** When the run entered its current step (a wait or wait_for_event lasts); null before. */
  step_started_at: Date | null;
  /** The custom event a wait_for_event step waits for. */
  waiting_for: string | null;
  /** The contact_events id that ended that wait. */
  awaited_event_id: string | null;
  /** Why the contact left the run (status `exited`). */
  exit_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

/** One step a run went through (the run inspector). */
export interface RunStepRow {
  run_id: string;
  seq: number;
  step: number;
  step_id: string | null;
  type: string;
  started_at: Date;
  finished_at: Date;
  outcome: string;
  next_step: number | null;
  detail: Record<string, unknown>;
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
            ${jsonParam(db, a.steps)}::jsonb, ${a.status}, ${a.keyId})
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
      steps = ${p.steps === undefined ? db`steps` : db`${jsonParam(db, p.steps)}::jsonb`},
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

export async function listRuns(
  db: Db,
  automationId: string,
  page: Page & { status?: RunStatus | undefined },
): Promise<RunRow[]> {
  const status = page.status ? db`and status = ${page.status}` : db``;
  return await pagedRows<RunRow>(
    db,
    page,
    (cursor, order, limit) => db<RunRow[]>`
      select * from automation_runs where automation_id = ${automationId} ${status} ${cursor} ${order} limit ${limit}`,
  );
}

export async function findRun(db: Db, automationId: string, runId: string): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    select * from automation_runs where automation_id = ${automationId} and id = ${runId}`;
  return row ?? null;
}

/** The steps a run went through, in order. */
export async function runSteps(db: Db, runId: string): Promise<RunStepRow[]> {
  return await db<RunStepRow[]>`select * from automation_run_steps where run_id = ${runId} order by seq`;
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

const RUN_COLUMNS: ColumnSpec<NewRun & { id: string; next_at: Date }> = {
  id: 'text',
  automation_id: 'text',
  org_id: 'text',
  contact_id: 'text',
  occurrence: 'text',
  mode: 'text',
  steps: 'jsonb',
  context: 'jsonb',
  next_at: 'timestamptz',
};

/** Starts runs; those of an occurrence already started are skipped. Returns the new run ids. */
export async function insertRuns(db: Db, runs: NewRun[]): Promise<string[]> {
  if (runs.length === 0) return [];
  const rows = runs.map((r) => ({ ...r, id: newId('run'), next_at: new Date() }));
  const u = unnestRows(db, rows, RUN_COLUMNS);
  const inserted = await db<{ id: string }[]>`
    insert into automation_runs (${u.columns}) ${u.select}
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

export interface RunMove {
  step: number;
  status: RunStatus;
  nextAt: Date | null;
  /** When the run entered `step` (null: not yet; the step job sets it). */
  stepStartedAt: Date | null;
  waitingFor?: string | null;
  emailId?: string;
  error?: string;
  exitReason?: string;
}

/** Moves the run from step `from`; false when the run is no longer active at that step. */
export async function advanceRun(db: Db, id: string, from: number, p: RunMove): Promise<boolean> {
  const rows = await db`
    update automation_runs set
      step = ${p.step},
      status = ${p.status},
      next_at = ${p.nextAt},
      step_started_at = ${p.stepStartedAt},
      waiting_for = ${p.waitingFor ?? null},
      awaited_event_id = ${p.step === from && p.status === 'active' ? db`awaited_event_id` : db`null`},
      email_ids = ${p.emailId ? db`array_append(email_ids, ${p.emailId}::text)` : db`email_ids`},
      last_error = ${p.error ?? null},
      exit_reason = ${p.exitReason ?? null},
      updated_at = now()
    where id = ${id} and step = ${from} and status = 'active'
    returning id`;
  return rows.length > 0;
}

/** Appends one entry to the run's step history (under the run's row lock). */
export async function recordRunStep(
  db: Db,
  e: Omit<RunStepRow, 'seq' | 'finished_at'> & { finished_at?: Date },
): Promise<void> {
  await db`
    insert into automation_run_steps (run_id, seq, step, step_id, type, started_at, finished_at, outcome, next_step, detail)
    values (${e.run_id},
            (select coalesce(max(seq), 0) + 1 from automation_run_steps where run_id = ${e.run_id}),
            ${e.step}, ${e.step_id}, ${e.type}, ${e.started_at}, ${e.finished_at ?? new Date()}, ${e.outcome},
            ${e.next_step}, ${jsonParam(db, e.detail)}::jsonb)`;
}

/** The run's contact with whether the organization suppresses its address (delivery's check). */
export async function runContact(
  db: Db,
  orgId: string,
  contactId: string,
): Promise<(ContactRow & { suppressed: string | null }) | null> {
  const [row] = await db<(ContactRow & { suppressed: string | null })[]>`
    select c.*, ${suppressionReasonSql(db, db`c.org_id`, db`null::text`, db`c.email`)} as suppressed
    from contacts c where c.org_id = ${orgId} and c.id = ${contactId}`;
  return row ?? null;
}

/**
 * Runs waiting (wait_for_event) for one of these events: the same contact, the event's name, an
 * event that came after the step began. Each such run is marked with the event (the first one
 * wins) and made due now; returns the runs and their step.
 */
export async function resumeWaitingRuns(
  db: Db,
  events: { id: string; contact_id: string; name: string }[],
): Promise<Pick<RunRow, 'id' | 'step'>[]> {
  if (events.length === 0) return [];
  return await db<Pick<RunRow, 'id' | 'step'>[]>`
    with ev as (
      select * from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.contact_id)}::text[],
                           ${events.map((e) => e.name)}::text[]) as x(id, contact_id, name)
    ),
    hit as (
      select distinct on (r.id) r.id, r.step, ev.name, ev.id as event_id
      from ev
      join contact_events ce on ce.id = ev.id
      join automation_runs r on r.contact_id = ev.contact_id and r.waiting_for = ev.name
      where r.status = 'active' and r.awaited_event_id is null and r.step_started_at <= ce.created_at
      order by r.id, ev.id
    )
    -- The run may have moved on (its timeout) while this waited for its row lock: the conditions
    -- are checked again on the row as it is then.
    update automation_runs r set awaited_event_id = hit.event_id, next_at = now(), updated_at = now()
    from hit
    where r.id = hit.id and r.status = 'active' and r.step = hit.step and r.waiting_for = hit.name
      and r.awaited_event_id is null
    returning r.id, r.step`;
}

/** Whether the condition holds for the contact (one query); `segments` are the segments named. */
export async function conditionHolds(
  db: Db,
  run: Pick<RunRow, 'org_id' | 'contact_id' | 'email_ids'>,
  condition: Condition,
  segments: Map<string, SegmentRow>,
): Promise<boolean> {
  const orgId = run.org_id;
  const contactId = run.contact_id;
  const [row] = await db<{ ok: boolean }[]>`
    select ${compileCondition(db, orgId, condition, segments, run.email_ids)} as ok
    from contacts c where c.org_id = ${orgId} and c.id = ${contactId}`;
  return row?.ok ?? false;
}

type Frag = PendingQuery<Row[]>;

function compileCondition(
  db: Db,
  orgId: string,
  c: Condition,
  segments: Map<string, SegmentRow>,
  emailIds: string[],
): Frag {
  const many = (parts: Condition[], op: 'and' | 'or') => {
    if (parts.length === 0) return op === 'and' ? db`true` : db`false`;
    return parts
      .map((x) => compileCondition(db, orgId, x, segments, emailIds))
      .reduce((acc, p) => (op === 'and' ? db`${acc} and ${p}` : db`${acc} or ${p}`));
  };
  if ('all' in c) return db`(${many(c.all, 'and')})`;
  if ('any' in c) return db`(${many(c.any, 'or')})`;
  if ('not' in c) return db`(not ${compileCondition(db, orgId, c.not, segments, emailIds)})`;
  if ('email_event' in c) {
    // The messages this run sent (the last one only, with `last`) had an event of that type.
    const ids = c.email_event.last ? emailIds.slice(-1) : emailIds;
    if (ids.length === 0) return db`false`;
    // Opens and clicks are people's only (DESIGN §20): a machine's carries data.machine = true.
    return db`exists (select 1 from events e where e.email_id = any(${ids}::text[]) and e.type = ${c.email_event.type}
      and (e.data->>'machine') is distinct from 'true')`;
  }
  if ('in_segment' in c) {
    const seg = segments.get(c.in_segment);
    if (!seg) return db`false`;
    return db`(${membershipCondition(db, orgId, seg.id, seg.filter)})`;
  }
  if ('last_event' in c) {
    const e = c.last_event;
    const within = e.within !== undefined ? parseWait(e.within) : null;
    return db`exists (
      select 1 from (
        select ce.created_at, ce.properties from contact_events ce
        where ce.contact_id = c.id ${e.name !== undefined ? db`and ce.name = ${e.name}` : db``}
        order by ce.created_at desc, ce.id desc limit 1) l
      where true
        ${within !== null ? db`and l.created_at >= now() - make_interval(secs => ${within / 1000})` : db``}
        ${e.properties ? db`and l.properties @> ${jsonParam(db, e.properties)}::jsonb` : db``})`;
  }
  return filterCondition(db, orgId, c);
}

/** Active runs due this long ago: their step job may have been lost. */
export async function stalledRuns(db: Db, graceSeconds: number, limit: number) {
  return await db<Pick<RunRow, 'id' | 'step'>[]>`
    select id, step from automation_runs
    where status = 'active' and next_at <= now() - make_interval(secs => ${graceSeconds})
    order by next_at limit ${limit}`;
}

/** Runs of each automation by status (the console's Automations list). */
export async function countRunsByStatus(
  db: Db,
  automationIds: string[],
): Promise<Map<string, Partial<Record<RunStatus, number>>>> {
  const rows = await db<{ automation_id: string; status: RunStatus; n: string }[]>`
    select automation_id, status, count(*) as n from automation_runs
    where automation_id = any(${automationIds}) group by automation_id, status`;
  const out = new Map<string, Partial<Record<RunStatus, number>>>();
  for (const r of rows) out.set(r.automation_id, { ...out.get(r.automation_id), [r.status]: Number(r.n) });
  return out;
}
