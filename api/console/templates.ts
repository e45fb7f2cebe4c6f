// Templates: the list, and per template its published versions, the draft's editor (subject, HTML,
// text) with a preview rendered by the same code as sending (shared/templates.ts renderTemplate,
// declared variables filled with their fallback or a sample), and Publish after a confirmation.
// The preview is a sandboxed frame: the editor's Preview button posts the draft into it (no script
// needed); /console/assets/console.js presses it half a second after each keystroke. Members read;
// admins edit and publish.
import {
  findTemplate,
  findTemplateVersion,
  listTemplates,
  listTemplateVersions,
  publishTemplate,
  updateTemplateDraft,
  type TemplateContent,
  type TemplateRow,
} from '../../shared/db/templates.js';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import { checkTemplateSource, renderTemplate, type VariableValue } from '../../shared/templates.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { csrfField, escapeHtml, html, when, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { badge, card, details, doneBanner, emptyState, queryString, tableCard, textField } from './ui.js';

const ACTIVE = '/console/templates';
const PAGE_SIZE = 100;
const MAX_PART = 512 * 1024;

async function templatesPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const rows = (await listTemplates(ctx.deps.sql, session.org_id, { limit: PAGE_SIZE })).slice(0, PAGE_SIZE);
  const list = rows.length
    ? tableCard(
        ['Template', 'Slug', 'Published', 'Updated'],
        rows.map(
          (t) =>
            html`<tr data-template="${t.slug}">
              <td><a class="row-link" href="/console/templates/${t.id}">${t.name}</a></td>
              <td><code>${t.slug}</code></td>
              <td>
                ${t.published_version ? badge(`version ${t.published_version}`, 'ok') : badge('draft only', 'neutral')}
              </td>
              <td class="nowrap">${when(t.updated_at)}</td>
            </tr>`,
        ),
        { label: 'Templates' },
      )
    : card(emptyState('No templates yet.', html`Create one with <code>POST /api/v1/templates</code>.`));
  show(ctx, session, { title: 'Templates', active: ACTIVE, body: list });
}

async function loadTemplate(ctx: ApiContext, session: SessionRow): Promise<TemplateRow> {
  const id = ctx.params.id ?? '';
  const t = isId(id, 'tpl') ? await findTemplate(ctx.deps.sql, session.org_id, id) : null;
  if (!t) throw notFound('Template');
  return t;
}

/** Values for a preview: each variable's fallback, else a sample that shows its name. */
function sampleValues(t: Pick<TemplateContent, 'variables'>): Record<string, VariableValue> {
  const out: Record<string, VariableValue> = {};
  for (const v of t.variables) {
    if (v.fallback_value !== undefined && v.fallback_value !== null) continue;
    out[v.key] = v.type === 'number' ? 42 : `[${v.key}]`;
  }
  return out;
}

const FRAME_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox";

function framePage(ctx: ApiContext, body: string): void {
  ctx.set('Content-Security-Policy', FRAME_POLICY);
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
}

function note(text: string): string {
  return `<!doctype html><meta charset="utf-8"><title>Preview</title><p style="font-family:sans-serif;color:#555">${escapeHtml(text)}</p>`;
}

/** The draft (or the posted edit) rendered as sending renders it; a template error is shown in the frame. */
function preview(ctx: ApiContext, content: Pick<TemplateContent, 'subject' | 'html' | 'text' | 'variables'>): void {
  try {
    checkTemplateSource(content, 'template');
    const parts = renderTemplate(content, sampleValues(content), 'variables');
    if (parts.html !== null) return framePage(ctx, parts.html);
    framePage(
      ctx,
      `<!doctype html><meta charset="utf-8"><title>Preview</title><pre style="white-space:pre-wrap;font-family:monospace">${escapeHtml(parts.text ?? '')}</pre>`,
    );
  } catch (err) {
    if (err instanceof ApiError) return framePage(ctx, note(`Cannot render: ${err.message}`));
    throw err;
  }
}

function part(form: URLSearchParams, name: string): string | null {
  const v = form.get(name) ?? '';
  if (v.length > MAX_PART) throw validationError(`${name} is longer than ${MAX_PART} characters`);
  return v === '' ? null : v;
}

function edited(t: TemplateRow, form: URLSearchParams): TemplateContent {
  const subject = part(form, 'subject');
  if (subject !== null && /[\r\n]/.test(subject)) throw validationError('The subject is one line');
  return { ...t, subject, html: part(form, 'html'), text: part(form, 'text') };
}

function editor(session: SessionRow, t: TemplateRow): Safe {
  const area = (name: 'html' | 'text', label: string, rows: number) =>
    html`<div class="field">
      <label for="f-${name}">${label}</label>
      <textarea id="f-${name}" name="${name}" rows="${rows}" spellcheck="false">${t[name] ?? ''}</textarea>
    </div>`;
  const readOnly = session.role !== 'admin';
  return html`<form method="post" action="/console/templates/${t.id}" class="editor" data-preview>
    ${csrfField(session)} ${textField({ name: 'subject', label: 'Subject', value: t.subject, maxlength: 998 })}
    ${area('html', 'HTML', 14)} ${area('text', 'Text', 6)}
    <div class="buttons">
      <button
        type="submit"
        formaction="/console/templates/${t.id}/preview"
        formtarget="template-preview"
        data-preview-button
      >
        Preview
      </button>
      ${readOnly ? '' : html`<button type="submit" class="primary">Save draft</button>`}
    </div>
  </form>`;
}

async function templatePage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const t = await loadTemplate(ctx, session);
  const versions = await listTemplateVersions(ctx.deps.sql, t.id);
  const vars = t.variables.length
    ? t.variables.map(
        (v) =>
          html`<code>${v.key}</code>
            (${v.type}${v.fallback_value !== undefined && v.fallback_value !== null ? html`, fallback ${String(v.fallback_value)}` : ''}) `,
      )
    : 'none';
  const versionList = versions.length
    ? tableCard(
        ['Version', 'Published'],
        versions.map(
          (v) =>
            html`<tr data-version="${v.version}">
              <td>
                <a href="/console/templates/${t.id}/versions/${v.version}">version ${v.version}</a>
                ${v.version === t.published_version ? badge('current', 'ok') : ''}
              </td>
              <td class="nowrap">${when(v.created_at)}</td>
            </tr>`,
        ),
        { label: 'Versions' },
      )
    : card(emptyState('Not published yet.', 'Sends can use it once a version is published.'), { title: 'Versions' });
  show(ctx, session, {
    title: t.name,
    active: ACTIVE,
    lead: html`<code>${t.slug}</code> ·
      ${t.published_version ? `version ${t.published_version} is what sends use` : 'draft only'}`,
    actions:
      session.role === 'admin'
        ? html`<a class="btn primary" href="/console/templates/${t.id}/publish">Publish draft</a>`
        : undefined,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}
      ${card(
        details([
          ['Id', html`<code>${t.id}</code>`],
          ['Variables', html`${vars}`],
          ['From', t.from_address],
        ]),
        { title: 'Template' },
      )}
      <div class="grid-2">
        ${card(editor(session, t), { title: 'Draft' })}
        ${card(
          html`<iframe
              class="message-frame"
              name="template-preview"
              title="Preview of the draft"
              sandbox=""
              src="/console/templates/${t.id}/preview"
            ></iframe>
            <p class="muted">Rendered as sending renders it; variables without a fallback show a sample.</p>`,
          { title: 'Preview' },
        )}
      </div>
      ${versionList}`,
  });
}

async function previewSaved(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  preview(ctx, await loadTemplate(ctx, session));
}

async function previewPosted(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const t = await loadTemplate(ctx, session);
  try {
    preview(ctx, edited(t, form));
  } catch (err) {
    if (err instanceof ApiError) return framePage(ctx, note(err.message));
    throw err;
  }
}

async function saveAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  if (session.role !== 'admin') throw new ApiError('forbidden', 'Only admins edit templates');
  const t = await loadTemplate(ctx, session);
  const content = edited(t, form);
  checkTemplateSource(content, 'template');
  const saved = await updateTemplateDraft(ctx.deps.sql, session.org_id, t.id, {
    subject: content.subject,
    html: content.html,
    text: content.text,
  });
  if (!saved) throw notFound('Template');
  await audit(ctx, session, 'template.draft_saved', { type: 'template', id: t.id });
  redirect(ctx, `/console/templates/${t.id}?done=${encodeURIComponent('Draft saved.')}`);
}

async function publishConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const t = await loadTemplate(ctx, session);
  confirmPage(ctx, session, {
    title: 'Publish this draft?',
    active: ACTIVE,
    question: html`The draft of <strong>${t.name}</strong> becomes version ${(t.published_version ?? 0) + 1}, and sends
      that name no version use it from now on.`,
    action: `/console/templates/${t.id}/publish`,
    confirmLabel: 'Publish',
    back: `/console/templates/${t.id}`,
  });
}

async function publishAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const t = await loadTemplate(ctx, session);
  const row = await ctx.deps.sql.begin((tx) =>
    publishTemplate(tx, session.org_id, t.id, (draft) => {
      checkTemplateSource(draft, 'template');
      if (draft.html === null && draft.text === null)
        throw validationError('template has neither html nor text; set one before publishing');
    }),
  );
  if (!row) throw notFound('Template');
  await audit(ctx, session, 'template.published', { type: 'template', id: t.id }, { version: row.published_version });
  redirect(
    ctx,
    `/console/templates/${t.id}?done=${encodeURIComponent(`Version ${row.published_version} is published.`)}`,
  );
}

async function versionPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const t = await loadTemplate(ctx, session);
  const n = Number(ctx.params.version);
  const v = Number.isInteger(n) && n > 0 ? await findTemplateVersion(ctx.deps.sql, session.org_id, t.id, n) : null;
  if (!v || v.version === null) throw notFound('Template version');
  show(ctx, session, {
    title: `${t.name}, version ${v.version}`,
    active: ACTIVE,
    actions: html`<a class="btn" href="/console/templates/${t.id}">Back to the template</a>`,
    body: html`${card(
      details([
        ['Subject', v.subject],
        ['From', v.from_address],
      ]),
      { title: 'Version' },
    )}
    ${v.html !== null ? card(html`<pre class="body" tabindex="0">${v.html}</pre>`, { title: 'HTML' }) : ''}
    ${v.text !== null ? card(html`<pre class="body" tabindex="0">${v.text}</pre>`, { title: 'Text' }) : ''}`,
  });
}

export const TEMPLATE_PAGES: PageRule[] = [
  { method: 'GET', path: '/templates', role: 'member', page: templatesPage },
  { method: 'GET', path: '/templates/:id', role: 'member', page: templatePage },
  { method: 'POST', path: '/templates/:id', role: 'admin', page: saveAction },
  { method: 'GET', path: '/templates/:id/preview', role: 'member', page: previewSaved },
  { method: 'POST', path: '/templates/:id/preview', role: 'member', page: previewPosted },
  { method: 'GET', path: '/templates/:id/publish', role: 'admin', page: publishConfirm },
  { method: 'POST', path: '/templates/:id/publish', role: 'admin', page: publishAction },
  { method: 'GET', path: '/templates/:id/versions/:version', role: 'member', page: versionPage },
];
