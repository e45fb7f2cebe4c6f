// The Emails page: every message of the organization, newest first, live or test (a toggle),
// filtered by any combination of status, recipient, sender, subject words, domain, tag, key,
// template and dates, 50 a page with cursor links. The detail page, its content views and its
// actions are in ./email-detail.ts, ./email-content.ts and ./email-actions.ts.
import { listOrgDomains } from '../../shared/db/domains.js';
import { hasEmails, searchEmails, type EmailListRow } from '../../shared/db/email-search.js';
import { listKeys } from '../../shared/db/keys.js';
import { listTemplates } from '../../shared/db/templates.js';
import type { SessionRow } from '../../shared/db/users.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { EMAIL_ACTION_PAGES } from './email-actions.js';
import { EMAIL_BULK_PAGES } from './email-bulk.js';
import { EMAIL_CONTENT_PAGES } from './email-content.js';
import { emailDetailPage } from './email-detail.js';
import { filterForm, listHref, parseFilters, type FilterParams } from './email-filters.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest, type PageRule } from './respond.js';
import {
  badge,
  card,
  dataTable,
  doneBanner,
  emptyState,
  hrefWith,
  modeSwitch,
  pager,
  queryString,
  stateBadge,
} from './ui.js';

const PAGE_SIZE = 50;
/** How many keys and templates the filter's selects offer. */
const CHOICES = 200;

/**
 * The status badge, and under it the last event: its time, and its name when it is not what the
 * badge already says (a message that failed as a whole after a rejection, say).
 */
function statusCell(e: EmailListRow): Safe {
  if (!e.last_event) return html`${stateBadge(e.state)}`;
  const name = e.last_event.replace(/^email\./, '');
  return html`${stateBadge(e.state)}<br /><small class="muted"
      >${name === e.state ? '' : `${name.replace(/_/g, ' ')} `}${when(e.last_event_at)}</small
    >`;
}

/** The address of "Name <address>", for a narrow column; the whole value goes in the title. */
function address(value: string): Safe {
  const bare = /<([^<>]+)>\s*$/.exec(value)?.[1] ?? value;
  return html`<span title="${value}">${bare}</span>`;
}

/** Broadcast mail stands out; transactional, the default, stays quiet. */
function streamBadge(stream: EmailListRow['stream']): Safe {
  return stream === 'broadcast' ? badge('broadcast', 'info') : html`<span class="muted">transactional</span>`;
}

function row(e: EmailListRow): Safe {
  const more = e.recipient_count > 1 ? html` <span class="muted">+${e.recipient_count - 1}</span>` : '';
  return html`<tr data-email-id="${e.id}">
    <td class="nowrap" data-label="Time">${when(e.created_at)}</td>
    <td class="clip" data-label="From">${address(e.from_address)}</td>
    <td class="clip" data-label="To">
      ${e.first_recipient ? address(e.first_recipient) : html`<span class="muted">none</span>`}${more}
    </td>
    <td class="clip subject" data-label="Subject">
      ${e.mode === 'test' ? html`${badge('test', 'info')} ` : ''}<a class="row-link" href="/console/emails/${e.id}"
        >${e.subject || html`<span class="muted">(no subject)</span>`}</a
      >
    </td>
    <td class="nowrap" data-label="Stream" data-stream="${e.stream}">${streamBadge(e.stream)}</td>
    <td class="nowrap" data-label="Status">${statusCell(e)}</td>
  </tr>`;
}

function modeToggle(params: FilterParams): Safe {
  return modeSwitch(params.mode === 'test' ? 'test' : 'live', (mode) => listHref({ ...params, mode }));
}

/** What can be done to the whole filtered list: export it, and (admins) the bulk actions. */
function listActions(session: SessionRow, params: FilterParams): Safe {
  const at = (path: string) => hrefWith(path, params);
  return html`<div class="list-actions">
    <a class="btn" href="${at('/console/emails/export')}" download>Export CSV</a>
    ${
      session.role === 'admin'
        ? html`<a class="btn" href="${at('/console/emails/bulk/retry')}">Retry deferred…</a>
            <a class="btn" href="${at('/console/emails/bulk/cancel')}">Cancel scheduled…</a>
            <a class="btn" href="${at('/console/emails/bulk/unsuppress')}">Remove suppressions…</a>`
        : ''
    }
  </div>`;
}

function emptyList(filtered: boolean, test: boolean, params: FilterParams): Safe {
  if (filtered) {
    return emptyState('No emails match these filters.', 'Widen the search or clear the filters.');
  }
  return emptyState(
    test ? 'No test emails yet.' : 'No emails yet.',
    test
      ? html`Send with a test key (<code>tern_test_…</code>): the message is composed and signed but never leaves the
        machine, and shows up here.`
      : html`Live mail shows up here once you send with a live key from <a href="/console/keys">API keys</a> from a
          domain of your own (add it under <a href="/console/domains">Domains</a>). Mail sent with a test key, as the
          demo's is, is under <a href="${listHref({ ...params, mode: 'test' })}">Test</a>.`,
  );
}

export async function emailsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  // Without a mode asked for, an organization that has sent no live mail yet (the demo, a new
  // install trying test keys) sees its test mail.
  const asked = typeof ctx.query.mode === 'string' && ctx.query.mode !== '';
  const testFirst = !asked && !(await hasEmails(sql, session.org_id, 'live'));
  const f = parseFilters(testFirst ? { ...ctx.query, mode: 'test' } : ctx.query);
  const cursor = (name: 'after' | 'before') => {
    const v = ctx.query[name];
    return typeof v === 'string' && isId(v, 'em') ? v : undefined;
  };
  const page = { limit: PAGE_SIZE, after: cursor('after'), before: cursor('before') };
  const [rows, domains, keys, templates] = await Promise.all([
    searchEmails(sql, { ...f.search, orgId: session.org_id }, page),
    listOrgDomains(sql, session.org_id),
    listKeys(sql, session.org_id, { limit: CHOICES }),
    listTemplates(sql, session.org_id, { limit: CHOICES }),
  ]);
  const shown = rows.slice(0, PAGE_SIZE);
  const more = rows.length > PAGE_SIZE;
  // Going back (before=) there is always an older page; going forward, one when the extra row came.
  const older = shown.length && (more || page.before) ? listHref(f.params, { after: shown.at(-1)!.id }) : null;
  const newer =
    shown.length && (page.after || (page.before && more)) ? listHref(f.params, { before: shown[0]!.id }) : null;
  const problems = f.problems.length
    ? html`<div class="banner warn" role="status">${f.problems.map((p) => html`<div>${p}</div>`)}</div>`
    : '';
  const list = shown.length
    ? dataTable(['Time', 'From', 'To', 'Subject', 'Stream', 'Status, last event'], shown.map(row), {
        label: 'Emails',
        cls: 'stack-sm',
      })
    : emptyList(f.filtered, f.search.mode === 'test', f.params);
  show(ctx, session, {
    title: 'Emails',
    active: '/console/emails',
    actions: modeToggle(f.params),
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${problems}${card(filterForm(f.params, { domains, keys: keys.slice(0, CHOICES), templates: templates.slice(0, CHOICES) }))}
    ${listActions(session, f.params)}${card(list, { cls: 'flush' })}${pager({ newer, older })}`,
  });
}

export const EMAIL_PAGES: PageRule[] = [
  { method: 'GET', path: '/emails', role: 'member', page: emailsPage },
  ...EMAIL_BULK_PAGES,
  { method: 'GET', path: '/emails/:id', role: 'member', page: emailDetailPage },
  ...EMAIL_CONTENT_PAGES,
  ...EMAIL_ACTION_PAGES,
];
