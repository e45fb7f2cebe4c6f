// Automations (DESIGN §5; ADMIN, live keys): a trigger and steps, CRUD, and the list of an
// automation's runs. The engine that starts and advances runs is workers/automation.ts.
import type { AuthContext } from '../../shared/auth.js';
import { parseWait } from '../../shared/automation-steps.js';
import {
  deleteAutomation,
  findAutomation,
  insertAutomation,
  listAutomations,
  listRuns,
  updateAutomation,
  type AutomationRow,
  type AutomationStep,
  type RunRow,
} from '../../shared/db/automations.js';
import type { Db } from '../../shared/db/pool.js';
import { findTemplateVersion } from '../../shared/db/templates.js';
import { notFound, validationError } from '../../shared/errors.js';
import { parseMailbox } from '../../shared/mail/addresses.js';
import {
  automationListQuerySchema,
  createAutomationSchema,
  patchAutomationSchema,
  type AutomationListQuery,
  type CreateAutomationBody,
  type PatchAutomationBody,
} from '../schemas/automations.js';
import type { Handlers } from '../types.js';
import { bodyValidator, listEnvelope, queryValidator } from '../validate.js';
import { fromDomain } from './emails-input.js';

const validateCreate = bodyValidator<CreateAutomationBody>(createAutomationSchema);
const validatePatch = bodyValidator<PatchAutomationBody>(patchAutomationSchema);
const validateList = queryValidator<AutomationListQuery>(automationListQuerySchema);

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
  return {
    object: 'automation_run',
    id: r.id,
    automation_id: r.automation_id,
    contact_id: r.contact_id,
    // the contact_events id that started it, or "contact_created"
    trigger: r.occurrence === 'created' ? 'contact_created' : r.occurrence,
    mode: r.mode,
    step: r.step,
    status: r.status,
    next_at: r.next_at ? r.next_at.toISOString() : null,
    email_ids: r.email_ids,
    error: r.last_error,
    created_at: r.created_at.toISOString(),
  };
}

/** Each wait parses; each send names a published template and a verified domain of the org. */
async function checkSteps(db: Db, auth: AuthContext, steps: AutomationStep[]): Promise<void> {
  for (const [i, step] of steps.entries()) {
    const where = `body.steps[${i}]`;
    if ('wait' in step) {
      if (parseWait(step.wait) === null) {
        throw validationError(`${where}.wait must be a duration such as "30s", "15m", "2h" or "3d" (at most a year)`);
      }
      continue;
    }
    const s = step.send;
    const tpl = await findTemplateVersion(db, auth.org.id, s.template, null);
    if (!tpl || tpl.version === null) {
      throw validationError(`${where}.send.template: template ${s.template} not found or not published`);
    }
    if (!s.subject && !tpl.subject) throw validationError(`${where}.send.subject is required (the template has none)`);
    const from = parseMailbox(s.from);
    if (!from.ok) throw validationError(`${where}.send.from ${JSON.stringify(s.from)} ${from.reason}`);
    fromDomain(`${where}.send`, auth, from.mailbox);
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
    const body = validateCreate(ctx.state.body);
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
    const q = validateList(ctx.query);
    const rows = await listAutomations(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /automations/:id': async (ctx) => {
    ctx.body = render(await automationOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!));
  },

  'PATCH /automations/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const body = validatePatch(ctx.state.body);
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
    const q = validateList(ctx.query);
    const a = await automationOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    const rows = await listRuns(ctx.deps.sql, a.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderRun);
  },
};
