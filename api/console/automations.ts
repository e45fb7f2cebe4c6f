// Automations and received mail (read-only): each automation with its runs by status, one
// automation's steps and latest runs; the replies received (and messages routed by inbound rules),
// one message with its thread: the email it answers and every reply to that email, in order.
import {
  countRunsByStatus,
  findAutomation,
  listAutomations,
  listRuns,
  updateAutomation,
  type RunStatus,
} from '../../shared/db/automations.js';
import { getInbound, inboundThread, listInbound, type InboundRow } from '../../shared/db/inbound.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { html, postButton, when, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { card, details, emptyState, hrefWith, pager, queryString, stateBadge, tableCard } from './ui.js';

const PAGE_SIZE = 50;
const RUN_STATES: RunStatus[] = ['active', 'completed', 'stopped', 'failed'];

async function automationsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const rows = (await listAutomations(sql, session.org_id, { limit: PAGE_SIZE })).slice(0, PAGE_SIZE);
  const runs = await countRunsByStatus(
    sql,
    rows.map((a) => a.id),
  );
  const list = rows.length
    ? tableCard(
        ['Automation', 'Trigger', 'State', ...RUN_STATES.map((s) => ({ label: `Runs ${s}`, num: true })), 'Created'],
        rows.map((a) => {
          const n = runs.get(a.id) ?? {};
          return html`<tr data-automation="${a.id}">
            <td><a class="row-link" href="/console/automations/${a.id}">${a.name}</a></td>
            <td>${a.trigger_type === 'event' ? html`event <code>${a.trigger_event}</code>` : 'contact created'}</td>
            <td>${stateBadge(a.status)}</td>
            ${RUN_STATES.map((s) => html`<td class="num">${n[s] ?? 0}</td>`)}
            <td class="nowrap">${when(a.created_at)}</td>
          </tr>`;
        }),
        { label: 'Automations' },
      )
    : card(emptyState('No automations yet.', html`Create one with <code>POST /api/v1/automations</code>.`));
  show(ctx, session, { title: 'Automations', active: '/console/automations', body: list });
}

async function automationPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const id = ctx.params.id ?? '';
  const a = isId(id, 'aut') ? await findAutomation(sql, session.org_id, id) : null;
  if (!a) throw notFound('Automation');
  const runs = (await listRuns(sql, a.id, { limit: PAGE_SIZE })).slice(0, PAGE_SIZE);
  show(ctx, session, {
    title: a.name,
    active: '/console/automations',
    lead: html`${stateBadge(a.status)} Triggered by
    ${a.trigger_type === 'event' ? html`the event <code>${a.trigger_event}</code>` : 'a new contact'}.`,
    actions:
      session.role !== 'admin'
        ? undefined
        : a.status === 'enabled'
          ? postButton(session, `/console/automations/${a.id}/pause`, 'Pause')
          : html`<a class="btn primary" href="/console/automations/${a.id}/resume">Resume…</a>`,
    body: html`${card(html`<pre class="body" tabindex="0">${JSON.stringify(a.steps, null, 2)}</pre>`, { title: 'Steps' })}
    ${
      runs.length
        ? tableCard(
            ['Run', 'Contact', 'State', { label: 'Step', num: true }, 'Next step', 'Last error', 'Started'],
            runs.map(
              (r) =>
                html`<tr data-run="${r.id}">
                  <td><code>${r.id}</code></td>
                  <td><a href="/console/contacts/${r.contact_id}">${r.contact_id}</a></td>
                  <td>${stateBadge(r.status)}</td>
                  <td class="num">${r.step}</td>
                  <td class="nowrap">${r.next_at ? when(r.next_at) : ''}</td>
                  <td class="clip">${r.last_error ?? ''}</td>
                  <td class="nowrap">${when(r.created_at)}</td>
                </tr>`,
            ),
            { label: 'Latest runs' },
          )
        : card(emptyState('No runs yet.', 'A run starts when the trigger happens.'), { title: 'Runs' })
    }`,
  });
}

/** The Processing badge of a received message; `unparsed`: over the parse limits, kept raw. */
const INBOUND_STATES: Record<InboundRow['status'], string> = {
  processed: 'delivered',
  stored: 'pending',
  failed: 'failed',
  unparsed: 'unparsed',
};

function inboundRow(m: InboundRow): Safe {
  return html`<tr data-inbound="${m.id}">
    <td class="nowrap">${when(m.created_at)}</td>
    <td>${m.from_address ?? m.mail_from ?? ''}</td>
    <td><a class="row-link" href="/console/inbound/${m.id}">${m.subject || '(no subject)'}</a></td>
    <td>${m.kind ?? ''}</td>
    <td>${stateBadge(INBOUND_STATES[m.status])}</td>
  </tr>`;
}

async function inboundPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const cursor = (k: string) => {
    const v = queryString(ctx.query, k);
    return isId(v, 'inb') ? v : undefined;
  };
  const page = { after: cursor('after'), before: cursor('before') };
  const rows = await listInbound(ctx.deps.sql, session.org_id, null, { limit: PAGE_SIZE, ...page });
  const shown = rows.slice(0, PAGE_SIZE);
  const more = rows.length > PAGE_SIZE;
  const older =
    shown.length && (more || page.before) ? hrefWith('/console/inbound', { after: shown.at(-1)!.id }) : null;
  const newer =
    shown.length && (page.after || (page.before && more))
      ? hrefWith('/console/inbound', { before: shown[0]!.id })
      : null;
  const list = shown.length
    ? tableCard(['Received', 'From', 'Subject', 'Kind', 'Processing'], shown.map(inboundRow), {
        label: 'Received mail',
      })
    : card(
        emptyState(
          'No mail received yet.',
          'Replies to your messages arrive here once a domain publishes its reply MX record.',
        ),
      );
  show(ctx, session, { title: 'Inbound', active: '/console/inbound', body: html`${list}${pager({ newer, older })}` });
}

function message(m: InboundRow, current: boolean): Safe {
  return html`<article class="recipient" data-thread-item="${m.id}" ${current ? html`aria-current="true"` : ''}>
    <div class="recipient-head">
      <strong>${m.from_address ?? m.mail_from ?? 'unknown sender'}</strong> ${when(m.created_at)}
      ${current ? html`<span class="badge info">this message</span>` : html`<a href="/console/inbound/${m.id}">open</a>`}
    </div>
    <p>${m.subject ?? ''}</p>
    <pre class="body" tabindex="0">${m.stripped_text ?? m.text ?? '(no text part)'}</pre>
  </article>`;
}

async function inboundMessagePage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const id = ctx.params.id ?? '';
  const m = isId(id, 'inb') ? await getInbound(sql, session.org_id, id) : null;
  if (!m) throw notFound('Received message');
  const thread = m.email_id ? await inboundThread(sql, session.org_id, m.email_id) : [m];
  show(ctx, session, {
    title: m.subject || '(no subject)',
    active: '/console/inbound',
    lead: html`From ${m.from_address ?? m.mail_from ?? 'unknown'} to
    ${m.to_addresses.join(', ') || m.rcpt_to.join(', ')}`,
    body: html`${card(
      details([
        ['Id', html`<code>${m.id}</code>`],
        ['Received', when(m.created_at)],
        ['Kind', m.kind],
        ['In reply to', m.email_id ? html`<a href="/console/emails/${m.email_id}">the email ${m.email_id}</a>` : null],
        ['Authentication', m.auth ? `SPF ${m.auth.spf}, DKIM ${m.auth.dkim}, DMARC ${m.auth.dmarc}` : null],
        [
          'Route',
          m.route ? `${m.route.match} → ${m.route.action}${m.route.forward_to ? ` ${m.route.forward_to}` : ''}` : null,
        ],
        ['Error', m.error],
      ]),
      { title: 'Message' },
    )}
    ${card(html`${thread.map((t) => message(t, t.id === m.id))}`, {
      title: m.email_id ? `Thread (${thread.length} repl${thread.length === 1 ? 'y' : 'ies'})` : 'Message',
    })}`,
  });
}

async function loadAutomation(ctx: ApiContext, session: SessionRow) {
  const id = ctx.params.id ?? '';
  const a = isId(id, 'aut') ? await findAutomation(ctx.deps.sql, session.org_id, id) : null;
  if (!a) throw notFound('Automation');
  return a;
}

/** Pause (disabled) or resume (enabled), as PATCH /automations/{id} with a status does. */
async function setStatus(ctx: ApiContext, session: SessionRow, status: 'enabled' | 'disabled'): Promise<void> {
  const a = await loadAutomation(ctx, session);
  if (!(await updateAutomation(ctx.deps.sql, session.org_id, a.id, { status }))) throw notFound('Automation');
  await audit(ctx, session, 'automation.updated', { type: 'automation', id: a.id }, { status });
  redirect(ctx, `/console/automations/${a.id}`);
}

async function resumeConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const a = await loadAutomation(ctx, session);
  confirmPage(ctx, session, {
    title: 'Resume this automation?',
    active: '/console/automations',
    question: html`<strong>${a.name}</strong> starts runs again when it is triggered, and its runs send the mail of
      their steps.`,
    action: `/console/automations/${a.id}/resume`,
    confirmLabel: 'Resume automation',
    back: `/console/automations/${a.id}`,
  });
}

export const AUTOMATION_PAGES: PageRule[] = [
  {
    method: 'POST',
    path: '/automations/:id/pause',
    role: 'admin',
    page: (ctx, r) => setStatus(ctx, r.session, 'disabled'),
  },
  { method: 'GET', path: '/automations/:id/resume', role: 'admin', page: resumeConfirm },
  {
    method: 'POST',
    path: '/automations/:id/resume',
    role: 'admin',
    page: (ctx, r) => setStatus(ctx, r.session, 'enabled'),
  },
  { method: 'GET', path: '/automations', role: 'member', page: automationsPage },
  { method: 'GET', path: '/automations/:id', role: 'member', page: automationPage },
  { method: 'GET', path: '/inbound', role: 'member', page: inboundPage },
  { method: 'GET', path: '/inbound/:id', role: 'member', page: inboundMessagePage },
];
