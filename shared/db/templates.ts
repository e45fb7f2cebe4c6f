// Templates: an editable draft per template plus immutable numbered versions (template_versions).
import { ApiError, isUniqueViolation } from '../errors.js';
import { isId, newId } from '../ids.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';
import { jsonParam, rowParam } from './params.js';

export interface TemplateVariable {
  key: string;
  type: 'string' | 'number';
  fallback_value?: string | number | null;
}

export interface TemplateContent {
  subject: string | null;
  html: string | null;
  text: string | null;
  from_address: string | null;
  variables: TemplateVariable[];
}

export interface TemplateRow extends TemplateContent {
  id: string;
  org_id: string;
  slug: string;
  name: string;
  published_version: number | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface NewTemplate extends TemplateContent {
  orgId: string;
  slug: string;
  name: string;
}

/** The ref is either a template id or a slug; they cannot collide (slugs have no `_`). */
function refCondition(db: Db, ref: string) {
  return isId(ref, 'tpl') ? db`t.id = ${ref}` : db`t.slug = ${ref.toLowerCase()}`;
}

/** Inserts a template; null when the slug is already taken in the organization. */
export async function insertTemplate(db: Db, t: NewTemplate): Promise<TemplateRow | null> {
  const [row] = await db<TemplateRow[]>`
    insert into templates (id, org_id, slug, name, subject, html, text, from_address, variables)
    values (${newId('tpl')}, ${t.orgId}, ${t.slug}, ${t.name}, ${t.subject}, ${t.html}, ${t.text},
            ${t.from_address}, ${jsonParam(db, t.variables)})
    on conflict (org_id, slug) where deleted_at is null do nothing
    returning *`;
  return row ?? null;
}

export async function findTemplate(db: Db, orgId: string, ref: string): Promise<TemplateRow | null> {
  const [row] = await db<TemplateRow[]>`
    select t.* from templates t
    where t.org_id = ${orgId} and t.deleted_at is null and ${refCondition(db, ref)}`;
  return row ?? null;
}

/** Newest first; fetches limit + 1 rows for `has_more`. */
export async function listTemplates(db: Db, orgId: string, page: Page): Promise<TemplateRow[]> {
  if (page.before) {
    const rows = await db<TemplateRow[]>`
      select * from templates
      where org_id = ${orgId} and deleted_at is null and id > ${page.before}
      order by id asc limit ${page.limit + 1}`;
    // Closest to the cursor first in time, newest first in the answer; the extra row (if any)
    // stays last so that listEnvelope trims it and reports has_more.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<TemplateRow[]>`
    select * from templates
    where org_id = ${orgId} and deleted_at is null ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

export async function listTemplateVersions(
  db: Db,
  templateId: string,
): Promise<{ version: number; created_at: Date }[]> {
  return await db<{ version: number; created_at: Date }[]>`
    select version, created_at from template_versions where template_id = ${templateId}
    order by version desc`;
}

export type TemplatePatch = Partial<Pick<TemplateRow, 'name' | 'slug'> & TemplateContent>;

/** Edits the draft; published versions are never touched. 409 conflict on a taken slug. */
export async function updateTemplateDraft(
  db: Db,
  orgId: string,
  id: string,
  patch: TemplatePatch,
): Promise<TemplateRow | null> {
  const set: Record<string, unknown> = { ...patch };
  if (patch.variables) set.variables = jsonParam(db, patch.variables);
  const columns = Object.keys(set);
  if (columns.length === 0) return await findTemplate(db, orgId, id);
  try {
    const [row] = await db<TemplateRow[]>`
      update templates set ${rowParam(db, set, columns)}, updated_at = now()
      where org_id = ${orgId} and id = ${id} and deleted_at is null
      returning *`;
    return row ?? null;
  } catch (err) {
    if (isUniqueViolation(err)) throw new ApiError('conflict', `A template with slug "${patch.slug}" already exists`);
    throw err;
  }
}

/**
 * Freezes the draft as the next version. The row lock serialises concurrent publishes of one
 * template, so two of them make versions N+1 and N+2, never a duplicate. `check` sees the locked
 * draft and may throw to refuse it. Run inside a transaction.
 */
export async function publishTemplate(
  db: Db,
  orgId: string,
  ref: string,
  check: (draft: TemplateRow) => void,
): Promise<TemplateRow | null> {
  const [locked] = await db<TemplateRow[]>`
    select t.* from templates t
    where t.org_id = ${orgId} and t.deleted_at is null and ${refCondition(db, ref)}
    for update`;
  if (!locked) return null;
  check(locked);
  const version = (locked.published_version ?? 0) + 1;
  await db`
    insert into template_versions (template_id, version, subject, html, text, from_address, variables)
    values (${locked.id}, ${version}, ${locked.subject}, ${locked.html}, ${locked.text},
            ${locked.from_address}, ${jsonParam(db, locked.variables)})`;
  const [row] = await db<TemplateRow[]>`
    update templates set published_version = ${version}, updated_at = now()
    where id = ${locked.id} returning *`;
  return row!;
}

/** Soft delete: sends stop finding it and its slug is free again; messages keep their reference. */
export async function softDeleteTemplate(db: Db, orgId: string, ref: string): Promise<TemplateRow | null> {
  const [row] = await db<TemplateRow[]>`
    update templates t set deleted_at = now(), updated_at = now()
    where t.org_id = ${orgId} and t.deleted_at is null and ${refCondition(db, ref)}
    returning *`;
  return row ?? null;
}

export interface TemplateVersionRow extends TemplateContent {
  template_id: string;
  slug: string;
  /** Null when the template exists but has no such (or no published) version. */
  version: number | null;
  published_version: number | null;
}

/** One version of a live template: the given one, else the latest published. */
export async function findTemplateVersion(
  db: Db,
  orgId: string,
  ref: string,
  version: number | null,
): Promise<TemplateVersionRow | null> {
  const [row] = await db<TemplateVersionRow[]>`
    select t.id as template_id, t.slug, t.published_version, v.version, v.subject, v.html, v.text,
           v.from_address, v.variables
    from templates t
    left join template_versions v
      on v.template_id = t.id and v.version = coalesce(${version}::int, t.published_version)
    where t.org_id = ${orgId} and t.deleted_at is null and ${refCondition(db, ref)}`;
  return row ?? null;
}
