// The request log pages (admins; DESIGN §21): the organization's API requests, newest first,
// filtered by status, path, key and mode, or those that made one email (the link on an email's
// page); one request with its redacted bodies. The rows are those of GET /api/v1/logs.
import {
  getRequestLog,
  listRequestLogs,
  requestLogsForEmail,
  type RequestLogRow,
} from '../../shared/db/request-logs.js';
import { notFound } from '../../shared/errors.js';
import { getOrgEmail } from '../../shared/db/email-detail.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest, type PageRule } from './respond.js';
import { badge, card, dataTable, details, emptyState, hrefWith, idCode, modeSwitch, pager, textField } from './ui.js';

const PAGE_SIZE = 50;

interface Filters {
  mode: 'live' | 'test';
  status?: string | undefined;
  path?: string | undefined;
  key?: string | undefined;
  email?: string | undefined;
}

function filtersOf(query: Record<string, unknown>): Filters {
  const pick = (name: string, re: RegExp) => {
    const v = query[name];
    return typeof v === 'string' && re.test(v) ? v : undefined;
  };
  return {
    mode: query.mode === 'test' ? 'test' : 'live',
    status: pick('status', /^[1-5]\d\d$/),
    path: pick('path', /^\/[\x21-\x7e]{0,300}$/),
    key: pick('key', /^key_[0-9A-Z]{26}$/),
    email: pick('email', /^em_[0-9A-Z]{26}$/),
  };
}

const statusBadge = (status: number) => badge(String(status), status >= 500 ? 'bad' : status >= 400 ? 'warn' : 'ok');

function row(r: RequestLogRow): Safe {
  return html`<tr data-log="${r.id}">
    <td class="nowrap">${when(r.created_at)}</td>
    <td class="nowrap">
      <a href="/console/logs/${r.id}"><code>${r.method} ${r.path}</code></a>
    </td>
    <td>${statusBadge(r.status)}</td>
    <td>${r.key_id ? idCode(r.key_id) : ''}</td>
    <td class="nowrap">${r.duration_ms} ms</td>
  </tr>`;
}

function filterForm(f: Filters): Safe {
  return html`<form
    method="get"
    action="/console/logs"
    class="filters"
    role="search"
    aria-label="Filter the request log"
  >
    <input type="hidden" name="mode" value="${f.mode}" />
    ${textField({ name: 'status', label: 'Status', value: f.status ?? null, placeholder: '422', maxlength: 3 })}
    ${textField({ name: 'path', label: 'Path starts with', value: f.path ?? null, placeholder: '/api/v1/emails', maxlength: 300 })}
    ${textField({ name: 'key', label: 'API key', value: f.key ?? null, placeholder: 'key_…', maxlength: 64 })}
    <div class="buttons">
      <button type="submit" class="primary">Filter</button>
      <a class="btn" href="/console/logs">Clear</a>
    </div>
  </form>`;
}

async function logsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const f = filtersOf(ctx.query);
  const cursor = (k: string) => {
    const v = ctx.query[k];
    return typeof v === 'string' && isId(v, 'log') ? v : undefined;
  };
  const page = { limit: PAGE_SIZE, after: cursor('after'), before: cursor('before') };
  const { sql } = ctx.deps;
  const email = f.email ? await getOrgEmail(sql, session.org_id, f.email) : null;
  if (f.email && !email) throw notFound('Email');
  const rows = email
    ? await requestLogsForEmail(sql, session.org_id, email)
    : await listRequestLogs(sql, session.org_id, f.mode, page, {
        ...(f.status ? { status: Number(f.status) } : {}),
        ...(f.path ? { path: f.path } : {}),
        ...(f.key ? { key_id: f.key } : {}),
      });
  const shown = rows.slice(0, PAGE_SIZE);
  const more = rows.length > PAGE_SIZE;
  const link = (c: Record<string, string>) => hrefWith('/console/logs', { ...f, ...c });
  const older = !email && shown.length && (more || page.before) ? link({ after: shown.at(-1)!.id }) : null;
  const newer = !email && shown.length && (page.after || (page.before && more)) ? link({ before: shown[0]!.id }) : null;
  const list = shown.length
    ? dataTable(['When', 'Request', 'Status', 'API key', 'Took'], shown.map(row), { label: 'API requests' })
    : emptyState('No request matches.', 'Requests made with API keys appear here a moment after their answer.');
  show(ctx, session, {
    title: email ? `Requests that made ${email.id}` : 'Request log',
    active: '/console/logs',
    lead: html`Every API request of the organization with its answer, secrets removed, kept as long as the
    organization's retention says (30 days by default).
    ${modeSwitch(f.mode, (mode) => hrefWith('/console/logs', { mode }))}`,
    body: html`${email ? '' : card(filterForm(f))}${card(list, { cls: 'flush' })}${pager({ newer, older })}`,
  });
}

const json = (v: unknown): Safe => html`<pre class="json">${v === null ? 'none' : JSON.stringify(v, null, 2)}</pre>`;

async function logPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const id = ctx.params.id ?? '';
  const { sql } = ctx.deps;
  const r = isId(id, 'log')
    ? ((await getRequestLog(sql, session.org_id, 'live', id)) ?? (await getRequestLog(sql, session.org_id, 'test', id)))
    : null;
  if (!r) throw notFound('Request');
  show(ctx, session, {
    title: `${r.method} ${r.path}`,
    active: '/console/logs',
    body: html`${card(
      details([
        ['When', when(r.created_at)],
        ['Status', statusBadge(r.status)],
        ['Route', html`<code>${r.route}</code>`],
        ['Query', r.query ? html`<code>${r.query}</code>` : null],
        ['API key', r.key_id ? idCode(r.key_id) : null],
        ['Mode', r.mode],
        ['IP', r.ip],
        ['User agent', r.user_agent],
        ['Took', `${r.duration_ms} ms`],
        ['Request id', idCode(r.request_id)],
      ]),
      { title: 'Request' },
    )}${card(json(r.request_body), { title: 'Request body' })}${card(json(r.response_body), { title: 'Response body' })}`,
  });
}

export const LOG_PAGES: PageRule[] = [
  { method: 'GET', path: '/logs', role: 'admin', page: logsPage },
  { method: 'GET', path: '/logs/:id', role: 'admin', page: logPage },
];
