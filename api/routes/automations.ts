// Automations (DESIGN §5, §16; ADMIN, live keys): a trigger and a graph of steps, CRUD, and the
// run inspector (an automation's runs, and one run with each step's time and outcome). The engine that starts and advances runs is workers/automation.ts.
import type { AuthContext } from '../../shared/auth.js';
import { checkGraph, stepType } from '../../shared/automation-steps.js';
import {
  deleteAutomation,
  findAutomation,
  insertAutomation,
  listAutomations,
  findRun,
  listRuns,
  runSteps,
  updateAutomation,
  type AutomationRow,
  type AutomationStep,
  type RunRow,
  type RunStepRow,
} from '../../shared/db/automations.js';
import { findSegments } from '../../shared/db/segments.js';
import { getWebhook } from '../../shared/db/webhooks.js';
import type { Db } from '../../shared/db/pool.js';
import { findTemplateVersion } from '../../shared/db/templates.js';
import { notFound, validationError } from '../../shared/errors.js';
import { parseMailbox } from '../../shared/mail/addresses.js';
import {
  type AutomationListQuery,
  type CreateAutomationBody,
  type PatchAutomationBody,
  type RunListQuery,
} from '../schemas/automations.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { fromDomain } from '../mail/emails-input.js';
import { checkOwnTopics } from './segments.js';
import { routeBody, routeQuery } from '../route-schemas.js';

function render(a: AutomationRow) {
  return {
    object: 'automation',
    id: a.id,
    name: a.name,
    trigger: a.trigger_type === 'event' ? { event: a.trigger_event } : { contact_created: true },
    steps: a.steps,
    status: a.status,
    created_at: a.created_at.toISOString(),
    updated_at: a.updated_at.toISOString(),
  };
}

function renderRun(r: RunRow) {
  const current = r.status === 'active' ? r.steps[r.step] : undefined;
  return {
    object: 'automation_run',
    id: r.id,
    automation_id: r.automation_id,
    contact_id: r.contact_id,
    // the contact_events id that started it, or "contact_created"
    trigger: r.occurrence === 'created' ? 'contact_created' : r.occurrence,
    mode: r.mode,
    step: r.step,
    // the id and type of the step an active run is on; null once it ended
    step_id: current?.id ?? null,
    step_type: current ? stepType(current) : null,
    step_started_at: r.step_started_at ? r.step_started_at.toISOString() : null,
    // the custom event a wait_for_event step waits for
    waiting_for: r.status === 'active' ? r.waiting_for : null,
    status: r.status,
    exit_reason: r.exit_reason,
    next_at: r.next_at ? r.next_at.toISOString() : null,
    email_ids: r.email_ids,
    error: r.last_error,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

function renderStep(s: RunStepRow) {
  return {
    step: s.step,
    step_id: s.step_id,
    type: s.type,
    outcome: s.outcome,
    next_step: s.next_step,
    started_at: s.started_at.toISOString(),
    finished_at: s.finished_at.toISOString(),
    detail: s.detail,
  };
}

/**
 * The step graph holds (shared/automation-steps.ts checkGraph), each send names a published
 * template and a verified domain of the org, and the segments, topics and webhooks named are the org's.
 */
async function checkSteps(db: Db, auth: AuthContext, steps: AutomationStep[]): Promise<void> {
  const refs = checkGraph(steps);
  for (const { at, send: s } of refs.templates) {
    const tpl = await findTemplateVersion(db, auth.org.id, s.template, null);
    if (!tpl || tpl.version === null) {
      throw validationError(`${at}.template: template ${s.template} not found or not published`);
    }
    if (!s.subject && !tpl.subject) throw validationError(`${at}.subject is required (the template has none)`);
    const from = parseMailbox(s.from);
    if (!from.ok) throw validationError(`${at}.from ${JSON.stringify(s.from)} ${from.reason}`);
    fromDomain(`${at}.from`, auth, from.mailbox);
  }
  const segments = new Set((await findSegments(db, auth.org.id, [...refs.segments])).map((r) => r.id));
  const missingSegment = [...refs.segments].find((id) => !segments.has(id));
  if (missingSegment) throw validationError(`body.steps names segment ${missingSegment}, which does not exist`);
  await checkOwnTopics(db, auth.org.id, refs.topics);
  for (const id of refs.webhooks) {
    if (!(await getWebhook(db, auth.org.id, id))) {
      throw validationError(`body.steps names webhook ${id}, which does not exist`);
    }
  }
}

async function automationOr404(db: Db, auth: AuthContext, id: string): Promise<AutomationRow> {
  const row = await findAutomation(db, auth.org.id, id);
  if (!row) throw notFound('Automation');
  return row;
}

export const automationHandlers: Handlers = {
  'POST /automations': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateAutomationBody>(ctx);
    await checkSteps(ctx.deps.sql, auth, body.steps);
    const row = await insertAutomation(ctx.deps.sql, {
      orgId: auth.org.id,
      name: body.name,
      trigger: body.trigger,
      steps: body.steps,
      status: body.status ?? 'enabled',
      keyId: auth.key.id,
    });
    ctx.status = 201;
    ctx.body = render(row);
  },

  'GET /automations': async (ctx) => {
    const q = routeQuery<AutomationListQuery>(ctx);
    const rows = await listAutomations(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /automations/:id': async (ctx) => {
    ctx.body = render(await automationOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!));
  },

  'PATCH /automations/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<PatchAutomationBody>(ctx);
    if (body.steps) await checkSteps(ctx.deps.sql, auth, body.steps);
    const row = await updateAutomation(ctx.deps.sql, auth.org.id, ctx.params.id!, body);
    if (!row) throw notFound('Automation');
    ctx.body = render(row);
  },

  'DELETE /automations/:id': async (ctx) => {
    const row = await deleteAutomation(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!row) throw notFound('Automation');
    ctx.body = { object: 'automation', id: row.id, deleted: true };
  },

  'GET /automations/:id/runs': async (ctx) => {
    const q = routeQuery<RunListQuery>(ctx);
    const a = await automationOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    const rows = await listRuns(ctx.deps.sql, a.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderRun);
  },

  'GET /automations/:id/runs/:run_id': async (ctx) => {
    const a = await automationOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    const run = await findRun(ctx.deps.sql, a.id, ctx.params.run_id!);
    if (!run) throw notFound('Run');
    const history = await runSteps(ctx.deps.sql, run.id);
    ctx.body = { ...renderRun(run), steps: run.steps, history: history.map(renderStep) };
  },
};
