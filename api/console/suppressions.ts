// The Suppressions page: the addresses live mail is not sent to (org-wide or for one domain),
// searched by address (exact or prefix), reason and domain; admins add and remove rows and import
// a CSV (all rows or none); everyone can export the list as CSV (shared/suppression-csv.ts, as the API).
import { listOrgDomains, type DomainRow } from '../../shared/db/domains.js';
import {
  addOrGetSuppression,
  deleteSuppressions,
  getSuppression,
  searchSuppressions,
  type SuppressionReason,
  type SuppressionRow,
  type SuppressionSearch,
} from '../../shared/db/suppressions.js';
import type { SessionRow } from '../../shared/db/users.js';
import { CsvError, csvProblem, readCsv } from '../../shared/csv/read.js';
import {
  importSuppressions,
  readSuppressionValue,
  SUPPRESSION_CSV_COLUMNS,
  SUPPRESSION_REASONS,
  suppressionRecords,
  type ImportSummary,
} from '../../shared/suppression-csv.js';
import { csvDownload } from '../csv-download.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { field } from './form.js';
import { csrfField, html, when, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { card, dataTable, emptyState, hrefWith, pager, selectField, stateBadge, textField } from './ui.js';

const PAGE_SIZE = 50;
const IMPORT_LIMIT = 5 * 1024 * 1024;

function scopeName(s: SuppressionRow, domains: DomainRow[]): string {
  return s.domain_id ? (domains.find((d) => d.id === s.domain_id)?.name ?? 'deleted domain') : 'Whole organization';
}

function row(session: SessionRow, s: SuppressionRow, domains: DomainRow[]): Safe {
  const remove =
    session.role === 'admin' ? html`<a class="btn small" href="/console/suppressions/${s.id}/remove">Remove</a>` : '';
  return html`<tr data-suppression="${s.email ?? s.pattern}">
    <td>${s.email ?? s.pattern}</td>
    <td>${scopeName(s, domains)}</td>
    <td>${stateBadge(s.reason)}</td>
    <td>${s.source_email_id ? html`<a href="/console/emails/${s.source_email_id}">${s.source_email_id}</a>` : ''}</td>
    <td class="nowrap">${when(s.created_at)}</td>
    <td>${remove}</td>
  </tr>`;
}

interface Query {
  q?: string;
  reason?: string;
  domain?: string;
}

function parseQuery(query: Record<string, unknown>): { params: Query; search: SuppressionSearch } {
  const str = (k: string) => (typeof query[k] === 'string' ? (query[k] as string).trim().slice(0, 320) : '');
  const params: Query = { q: str('q'), reason: str('reason'), domain: str('domain') };
  const search: SuppressionSearch = {};
  if (params.q) {
    const prefix = params.q.endsWith('*');
    const value = params.q.replace(/\*+$/, '').toLowerCase();
    if (value) search.email = { value, prefix };
  }
  if (SUPPRESSION_REASONS.includes(params.reason as SuppressionReason))
    search.reason = params.reason as SuppressionReason;
  if (params.domain === 'org' || isId(params.domain ?? '', 'dom')) search.domainId = params.domain;
  return { params, search };
}

function domainOptions(domains: DomainRow[], anyLabel: string): [string, string][] {
  return [['', anyLabel], ...domains.map((d): [string, string] => [d.id, d.name])];
}

function searchForm(p: Query, domains: DomainRow[]): Safe {
  return html`<form
    method="get"
    action="/console/suppressions"
    class="filters"
    role="search"
    aria-label="Search suppressions"
  >
    ${textField({ name: 'q', label: 'Address', value: p.q, type: 'search', hint: 'Exact, or end with * for a prefix' })}
    ${selectField({
      name: 'reason',
      label: 'Reason',
      value: p.reason,
      options: [['', 'Any'], ...SUPPRESSION_REASONS.map((r): [string, string] => [r, r.replace(/_/g, ' ')])],
    })}
    ${selectField({
      name: 'domain',
      label: 'Applies to',
      value: p.domain,
      options: [['', 'Any'], ['org', 'Whole organization'], ...domainOptions(domains, '').slice(1)],
    })}
    <div class="buttons">
      <button type="submit" class="primary">Search</button>
      <a class="btn" href="/console/suppressions">Clear</a>
    </div>
  </form>`;
}

function adminForms(session: SessionRow, domains: DomainRow[]): Safe {
  if (session.role !== 'admin') return html``;
  const add = html`<form method="post" action="/console/suppressions" class="row-form">
    ${csrfField(session)}
    ${textField({
      name: 'email',
      label: 'Address to suppress',
      required: true,
      maxlength: 320,
      hint: 'An address, or a rule such as *@example.com',
    })}
    ${selectField({ name: 'domain', label: 'Applies to', options: domainOptions(domains, 'Whole organization') })}
    <button type="submit" class="primary">Add suppression</button>
  </form>`;
  const upload = html`<form
    method="post"
    action="/console/suppressions/import"
    enctype="multipart/form-data"
    class="row-form"
  >
    ${csrfField(session)}
    ${textField({
      name: 'file',
      label: 'CSV file',
      type: 'file',
      required: true,
      attrs: html`accept=".csv,text/csv"`,
      hint: 'Header row with email (domain and reason optional); up to 100,000 rows',
    })}
    <button type="submit">Import CSV</button>
  </form>`;
  return html`<div class="grid-2">${card(add, { title: 'Add' })}${card(upload, { title: 'Import' })}</div>`;
}

function banner(query: Record<string, unknown>): Safe | string {
  const n = (k: string) => (typeof query[k] === 'string' && /^\d+$/.test(query[k] as string) ? Number(query[k]) : null);
  const imported = n('imported');
  if (imported !== null) {
    const skipped = n('skipped') ?? 0;
    return html`<p class="banner ok" role="status">
      Imported ${imported} suppression${imported === 1 ? '' : 's'}${skipped ? html`; ${skipped} already there` : ''}.
    </p>`;
  }
  if (typeof query.added === 'string')
    return html`<p class="banner ok" role="status">${query.added} is suppressed.</p>`;
  if (typeof query.removed === 'string') {
    return html`<p class="banner ok" role="status">${query.removed} is no longer suppressed.</p>`;
  }
  return '';
}

async function suppressionsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const { params, search } = parseQuery(ctx.query);
  const cursor = (k: string) =>
    typeof ctx.query[k] === 'string' && isId(ctx.query[k] as string, 'sup') ? (ctx.query[k] as string) : undefined;
  const page = { limit: PAGE_SIZE, after: cursor('after'), before: cursor('before') };
  const [rows, domains] = await Promise.all([
    searchSuppressions(sql, session.org_id, search, page),
    listOrgDomains(sql, session.org_id),
  ]);
  const shown = rows.slice(0, PAGE_SIZE);
  const more = rows.length > PAGE_SIZE;
  const link = (c: Record<string, string>) => hrefWith('/console/suppressions', { ...params, ...c });
  const older = shown.length && (more || page.before) ? link({ after: shown.at(-1)!.id }) : null;
  const newer = shown.length && (page.after || (page.before && more)) ? link({ before: shown[0]!.id }) : null;
  const filtered = Boolean(search.email || search.reason || search.domainId);
  const list = shown.length
    ? dataTable(
        ['Address', 'Applies to', 'Reason', 'Source email', 'Added', { label: 'Actions', hidden: true }],
        shown.map((s) => row(session, s, domains)),
        { label: 'Suppressions' },
      )
    : filtered
      ? emptyState('No suppression matches.', 'Search another address, or clear the search.')
      : emptyState(
          'No suppressions yet.',
          'Hard bounces and complaints on live mail add addresses here on their own; add one by hand or import a CSV.',
        );
  show(ctx, session, {
    title: 'Suppressions',
    active: '/console/suppressions',
    actions: html`<a class="btn" href="/console/suppressions/export">Export CSV</a>`,
    lead: html`Live mail to these addresses is rejected instead of sent. Test keys ignore the list.`,
    body: html`${banner(ctx.query)}${card(searchForm(params, domains))}${card(list, { cls: 'flush' })}${pager({ newer, older })}
    ${adminForms(session, domains)}`,
  });
}

async function addAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const value = field(form, 'email', 'Address', 320).trim();
  const read = readSuppressionValue(value);
  if (!read.ok) throw validationError(`"${value}" ${read.message}`);
  const domainRef = form.get('domain') ?? '';
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  const domain = domainRef ? domains.find((d) => d.id === domainRef) : null;
  if (domain === undefined) throw validationError('Applies to: not a domain of this organization');
  const { row, created } = await addOrGetSuppression(ctx.deps.sql, {
    orgId: session.org_id,
    email: read.email ?? '',
    pattern: read.pattern ?? undefined,
    domainId: domain?.id ?? null,
    reason: 'manual',
    sourceEmailId: null,
  });
  const shown = row.email ?? row.pattern ?? value;
  if (created) await audit(ctx, session, 'suppression.added', { type: 'suppression', id: row.id }, { value: shown });
  redirect(ctx, hrefWith('/console/suppressions', { added: shown }));
}

async function loadSuppression(ctx: ApiContext, session: SessionRow): Promise<SuppressionRow> {
  const id = ctx.params.id ?? '';
  const row = isId(id, 'sup') ? await getSuppression(ctx.deps.sql, session.org_id, id) : null;
  if (!row) throw notFound('Suppression');
  return row;
}

async function removeConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const s = await loadSuppression(ctx, session);
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  confirmPage(ctx, session, {
    title: 'Remove this suppression?',
    active: '/console/suppressions',
    question: html`<strong>${s.email ?? s.pattern}</strong> (${scopeName(s, domains).toLowerCase()},
      ${s.reason.replace(/_/g, ' ')}) will receive live mail again.`,
    action: `/console/suppressions/${s.id}/remove`,
    confirmLabel: 'Remove suppression',
    back: '/console/suppressions',
    danger: true,
  });
}

async function removeAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const s = await loadSuppression(ctx, session);
  const [gone] = await deleteSuppressions(ctx.deps.sql, session.org_id, [s.id]);
  if (!gone) throw notFound('Suppression');
  await audit(
    ctx,
    session,
    'suppression.removed',
    { type: 'suppression', id: s.id },
    { email: s.email, pattern: s.pattern },
  );
  redirect(ctx, hrefWith('/console/suppressions', { removed: s.email ?? s.pattern ?? s.id }));
}

async function exportAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  const all = { domainIds: null, orgWide: true };
  const records = suppressionRecords(ctx.deps.sql, session.org_id, all, {}, domains);
  const name = `suppressions-${new Date().toISOString().slice(0, 10)}.csv`;
  csvDownload(ctx, name, SUPPRESSION_CSV_COLUMNS, records, { event: 'SUPPRESSION_EXPORT_FAILED' });
}

/** Thrown inside the import's transaction to roll it back: the console applies a file whole or not at all. */
class ImportRefused extends Error {
  constructor(readonly errors: string[]) {
    super('import refused');
  }
}

async function readAll(ctx: ApiContext, orgId: string, data: Buffer): Promise<ImportSummary> {
  const domains = await listOrgDomains(ctx.deps.sql, orgId);
  const scope = { domains, restrictedTo: null, domainId: null, reason: 'manual' as const };
  try {
    return await ctx.deps.sql.begin(async (tx) => {
      const s = await importSuppressions(tx, orgId, readCsv([data]), scope);
      if (s.rows === 0) throw new ImportRefused(['the file has no rows (a header row, then one address a line)']);
      if (s.failed === 0) return s;
      const lines = s.errors.map((e) => `line ${e.line}: ${e.value ? `"${e.value}" ` : ''}${e.message}`);
      const more = s.failed - s.errors.length;
      throw new ImportRefused(more > 0 ? [...lines, `… and ${more} more bad line${more === 1 ? '' : 's'}`] : lines);
    });
  } catch (err) {
    if (err instanceof CsvError) throw new ImportRefused([`line ${String(err.lines)}: ${csvProblem(err)}`]);
    throw err;
  }
}

async function importAction(ctx: ApiContext, { session, files }: ConsoleRequest): Promise<void> {
  const file = files.get('file');
  if (!file || file.data.length === 0) throw validationError('Choose a CSV file to import');
  let summary: ImportSummary;
  try {
    summary = await readAll(ctx, session.org_id, file.data);
  } catch (err) {
    if (!(err instanceof ImportRefused)) throw err;
    show(ctx, session, {
      title: 'Import refused',
      active: '/console/suppressions',
      status: 422,
      body: html`<div class="banner warn" data-error="import">
          Nothing was imported: fix these lines of <strong>${file.filename}</strong> and import the file again.
        </div>
        ${card(
          html`<ul data-import-errors>
            ${err.errors.map((e) => html`<li>${e}</li>`)}
          </ul>`,
        )}
        <p><a class="btn" href="/console/suppressions">Back to suppressions</a></p>`,
    });
    return;
  }
  await audit(
    ctx,
    session,
    'suppressions.imported',
    { type: 'organization', id: session.org_id },
    { rows: summary.rows, added: summary.created },
  );
  redirect(
    ctx,
    hrefWith('/console/suppressions', { imported: String(summary.created), skipped: String(summary.existing) }),
  );
}

export const SUPPRESSION_PAGES: PageRule[] = [
  { method: 'GET', path: '/suppressions', role: 'member', page: suppressionsPage },
  { method: 'POST', path: '/suppressions', role: 'admin', page: addAction },
  { method: 'GET', path: '/suppressions/export', role: 'member', page: exportAction },
  { method: 'POST', path: '/suppressions/import', role: 'admin', page: importAction, uploadLimit: IMPORT_LIMIT },
  { method: 'GET', path: '/suppressions/:id/remove', role: 'admin', page: removeConfirm },
  { method: 'POST', path: '/suppressions/:id/remove', role: 'admin', page: removeAction },
];
