// Templates (DESIGN §5): an editable draft plus frozen, numbered versions. Sends use published
// versions only (shared/templates.ts resolveTemplate); publishing freezes the draft as N+1.
import { randomBytes } from 'node:crypto';
import {
  findTemplate,
  insertTemplate,
  listTemplates,
  listTemplateVersions,
  publishTemplate,
  softDeleteTemplate,
  updateTemplateDraft,
  type TemplateContent,
  type TemplatePatch,
  type TemplateRow,
  type TemplateVariable,
} from '../../shared/db/templates.js';
import type { Db } from '../../shared/db/pool.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { checkTemplateSource, slugify } from '../../shared/templates.js';
import { type CreateTemplateBody, type TemplateDraftBody } from '../schemas/templates.js';
import type { Handlers } from '../types.js';
import { listEnvelope, type Pagination } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

function renderVariables(vars: TemplateVariable[]) {
  return vars.map((v) => ({ key: v.key, type: v.type, fallback_value: v.fallback_value ?? null }));
}

function render(t: TemplateRow) {
  return {
    object: 'template',
    id: t.id,
    slug: t.slug,
    name: t.name,
    subject: t.subject,
    html: t.html,
    text: t.text,
    from: t.from_address,
    variables: renderVariables(t.variables),
    published_version: t.published_version,
    created_at: t.created_at.toISOString(),
    updated_at: t.updated_at.toISOString(),
  };
}

async function renderWithVersions(db: Db, t: TemplateRow) {
  const versions = await listTemplateVersions(db, t.id);
  return {
    ...render(t),
    versions: versions.map((v) => ({ version: v.version, created_at: v.created_at.toISOString() })),
  };
}

/** Stored form of declared variables: a fallback only when one was given. */
function normalizeVariables(vars: TemplateVariable[]): TemplateVariable[] {
  return vars.map((v) =>
    v.fallback_value === undefined || v.fallback_value === null
      ? { key: v.key, type: v.type }
      : { key: v.key, type: v.type, fallback_value: v.fallback_value },
  );
}

/** The draft fields a body sets (absent fields are left out, null clears). */
function draftPatch(body: TemplateDraftBody): TemplatePatch {
  const patch: TemplatePatch = {};
  if (body.name !== undefined) patch.name = body.name;
  if (body.slug !== undefined) patch.slug = body.slug;
  if (body.subject !== undefined) patch.subject = body.subject;
  if (body.html !== undefined) patch.html = body.html;
  if (body.text !== undefined) patch.text = body.text;
  if (body.from !== undefined) patch.from_address = body.from;
  if (body.variables !== undefined) patch.variables = normalizeVariables(body.variables);
  return patch;
}

/** Inserts with a slug made from the name, adding -2, -3… (then a random suffix) while taken. */
async function insertWithGeneratedSlug(db: Db, orgId: string, name: string, content: TemplateContent) {
  const base = slugify(name);
  for (let n = 1; n <= 20; n++) {
    const slug = n === 1 ? base : `${base}-${n}`;
    const row = await insertTemplate(db, { orgId, name, slug, ...content });
    if (row) return row;
  }
  const row = await insertTemplate(db, { orgId, name, slug: `${base}-${randomBytes(4).toString('hex')}`, ...content });
  if (!row) throw new ApiError('conflict', 'Could not find a free slug for this template; pass one');
  return row;
}

/** A version must have a body to send. */
function checkPublishable(draft: TemplateRow): void {
  checkTemplateSource(draft, 'template');
  if (draft.html === null && draft.text === null) {
    throw validationError('template has neither html nor text; set one before publishing');
  }
}

export const templateHandlers: Handlers = {
  'POST /templates': async (ctx) => {
    const orgId = ctx.state.auth.org.id;
    const body = routeBody<CreateTemplateBody>(ctx);
    const p = draftPatch(body);
    const content: TemplateContent = {
      subject: p.subject ?? null,
      html: p.html ?? null,
      text: p.text ?? null,
      from_address: p.from_address ?? null,
      variables: p.variables ?? [],
    };
    checkTemplateSource(content);
    const { sql } = ctx.deps;
    let row: TemplateRow | null;
    if (body.slug !== undefined) {
      row = await insertTemplate(sql, { orgId, name: body.name, slug: body.slug, ...content });
      if (!row) throw new ApiError('conflict', `A template with slug "${body.slug}" already exists`);
    } else {
      row = await insertWithGeneratedSlug(sql, orgId, body.name, content);
    }
    ctx.status = 201;
    ctx.body = await renderWithVersions(sql, row);
  },

  // Resend's templates.duplicate: a new template holding the draft (name "… (copy)"), unpublished.
  'POST /templates/:id/duplicate': async (ctx) => {
    const orgId = ctx.state.auth.org.id;
    const { sql } = ctx.deps;
    const source = await findTemplate(sql, orgId, ctx.params.id!);
    if (!source) throw notFound('Template');
    const name = `${source.name.slice(0, 193)} (copy)`;
    const { subject, html, text, from_address, variables } = source;
    const row = await insertWithGeneratedSlug(sql, orgId, name, { subject, html, text, from_address, variables });
    ctx.status = 201;
    ctx.body = await renderWithVersions(sql, row);
  },

  'GET /templates': async (ctx) => {
    const q = routeQuery<Pagination>(ctx);
    const rows = await listTemplates(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /templates/:id': async (ctx) => {
    const row = await findTemplate(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!row) throw notFound('Template');
    ctx.body = await renderWithVersions(ctx.deps.sql, row);
  },

  'PATCH /templates/:id': async (ctx) => {
    const orgId = ctx.state.auth.org.id;
    const body = routeBody<TemplateDraftBody>(ctx);
    const { sql } = ctx.deps;
    const current = await findTemplate(sql, orgId, ctx.params.id!);
    if (!current) throw notFound('Template');
    const patch = draftPatch(body);
    checkTemplateSource({ ...current, ...patch });
    const row = await updateTemplateDraft(sql, orgId, current.id, patch);
    if (!row) throw notFound('Template');
    ctx.body = await renderWithVersions(sql, row);
  },

  'POST /templates/:id/publish': async (ctx) => {
    const orgId = ctx.state.auth.org.id;
    const { sql } = ctx.deps;
    const row = await sql.begin((tx) => publishTemplate(tx, orgId, ctx.params.id!, checkPublishable));
    if (!row) throw notFound('Template');
    ctx.body = await renderWithVersions(sql, row);
  },

  'DELETE /templates/:id': async (ctx) => {
    const row = await softDeleteTemplate(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!row) throw notFound('Template');
    ctx.body = { object: 'template', id: row.id, slug: row.slug, deleted: true };
  },
};
