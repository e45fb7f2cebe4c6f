// The Audit page (admins; DESIGN §15): the organization's audit log, newest first, filtered by
// action and actor, paged like the other lists. The rows are those of GET /api/v1/audit-log.
import { auditActorNames, listAuditEntries, type AuditRow } from '../../shared/db/audit.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { card, dataTable, emptyState, hrefWith, idCode, pager, textField } from './ui.js';

const PAGE_SIZE = 50;

function param(query: Record<string, unknown>, name: string, re: RegExp): string | undefined {
  const v = query[name];
  return typeof v === 'string' && re.test(v) ? v : undefined;
}

function detailText(d: Record<string, unknown>): string {
  return Object.entries(d)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : JSON.stringify(v)}`)
    .join('; ');
}

function row(a: AuditRow, names: Map<string, string>): Safe {
  const name = names.get(a.actor_id);
  return html`<tr data-audit="${a.id}">
    <td class="nowrap">${when(a.created_at)}</td>
    <td class="nowrap"><code>${a.action}</code></td>
    <td data-actor="${a.actor_id}">
      ${a.actor_type === 'user' ? 'user' : 'key'}
      ${name ? html`<strong data-actor-name>${name}</strong>` : html`<span class="muted">(deleted)</span>`}<br />
      <a href="${hrefWith('/console/audit', { actor: a.actor_id })}" title="Only this actor's entries"
        >${idCode(a.actor_id)}</a
      >
    </td>
    <td>${a.target_type.replace(/_/g, ' ')}<br />${idCode(a.target_id)}</td>
    <td>${a.ip ?? ''}</td>
    <td class="muted">${detailText(a.detail)}</td>
  </tr>`;
}

function filterForm(filters: { action?: string | undefined; actor?: string | undefined }): Safe {
  return html`<form
    method="get"
    action="/console/audit"
    class="filters"
    role="search"
    aria-label="Filter the audit log"
  >
    ${textField({ name: 'action', label: 'Action', value: filters.action ?? null, placeholder: 'key.minted', maxlength: 64 })}
    ${textField({ name: 'actor', label: 'Actor', value: filters.actor ?? null, placeholder: 'key_… or usr_…', maxlength: 64 })}
    <div class="buttons">
      <button type="submit" class="primary">Filter</button>
      <a class="btn" href="/console/audit">Clear</a>
    </div>
  </form>`;
}

export async function auditPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const filters = {
    action: param(ctx.query, 'action', /^[a-z_]+\.[a-z_]+$/),
    actor: param(ctx.query, 'actor', /^[a-z]{2,3}_[0-9A-Z]{26}$/),
  };
  const cursor = (k: string) => {
    const v = ctx.query[k];
    return typeof v === 'string' && isId(v, 'aud') ? v : undefined;
  };
  const page = { limit: PAGE_SIZE, after: cursor('after'), before: cursor('before') };
  const rows = await listAuditEntries(ctx.deps.sql, session.org_id, filters, page);
  const shown = rows.slice(0, PAGE_SIZE);
  const names = await auditActorNames(ctx.deps.sql, session.org_id, shown);
  const more = rows.length > PAGE_SIZE;
  const link = (c: Record<string, string>) => hrefWith('/console/audit', { ...filters, ...c });
  const older = shown.length && (more || page.before) ? link({ after: shown.at(-1)!.id }) : null;
  const newer = shown.length && (page.after || (page.before && more)) ? link({ before: shown[0]!.id }) : null;
  const list = shown.length
    ? dataTable(
        ['When', 'Action', 'Actor', 'Target', 'IP', 'Detail'],
        shown.map((a) => row(a, names)),
        { label: 'Audit log' },
      )
    : filters.action || filters.actor
      ? emptyState('No entry matches.', 'Try another action or actor, or clear the filter.')
      : emptyState('Nothing recorded yet.', 'Changes made in the console or with ADMIN and FULL keys appear here.');
  show(ctx, session, {
    title: 'Audit log',
    active: '/console/audit',
    lead: html`Who changed what: keys, domains, webhooks, suppressions, settings, pauses, replays, retries and cancels.`,
    body: html`${card(filterForm(filters))}${card(list, { cls: 'flush' })}${pager({ newer, older })}`,
  });
}
