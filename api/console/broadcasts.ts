// Broadcasts (sends and edits go through the API): the list with each one's counts, and one page
// per broadcast with its progress (queued, sent, delivered, bounced, opened) read from its
// messages; admins cancel a scheduled or sending one after a confirmation, as
// POST /broadcasts/{id}/cancel does (cancelBroadcast). While it is scheduled or sending, /console/assets/console.js refreshes the progress
// from /console/broadcasts/{id}/progress every few seconds; without script, the Refresh link does.
import {
  broadcastProgress,
  cancelBroadcast,
  getBroadcast,
  hasBroadcasts,
  listBroadcasts,
  type BroadcastRow,
} from '../../shared/db/broadcasts.js';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, notFound } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import { MODES, type Mode } from '../../shared/keys.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { audit } from './audit.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import {
  badge,
  card,
  details,
  emptyState,
  hrefWith,
  modeSwitch,
  queryString,
  stateBadge,
  stats,
  tableCard,
} from './ui.js';

const PAGE_SIZE = 50;
const ACTIVE = '/console/broadcasts';

/** The mode asked for; without one, test when the organization has no live broadcast yet. */
async function modeOf(ctx: ApiContext, orgId: string): Promise<Mode> {
  const m = queryString(ctx.query, 'mode') as Mode;
  if (MODES.includes(m)) return m;
  return (await hasBroadcasts(ctx.deps.sql, orgId, 'live')) ? 'live' : 'test';
}

function scope(session: SessionRow, mode: Mode) {
  return { orgId: session.org_id, mode, domainIds: [] };
}

function running(b: BroadcastRow): boolean {
  return b.status === 'sending' || b.status === 'scheduled';
}

async function broadcastsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const mode = await modeOf(ctx, session.org_id);
  const rows = (await listBroadcasts(ctx.deps.sql, scope(session, mode), undefined, { limit: PAGE_SIZE })).slice(
    0,
    PAGE_SIZE,
  );
  const toggle = modeSwitch(mode, (m) => hrefWith(ACTIVE, { mode: m }));
  const list = rows.length
    ? tableCard(
        [
          'Broadcast',
          'Status',
          { label: 'Recipients', num: true },
          { label: 'Messages', num: true },
          { label: 'Skipped', num: true },
          { label: 'Failed', num: true },
          'Created',
        ],
        rows.map(
          (b) =>
            html`<tr data-broadcast="${b.id}">
              <td><a class="row-link" href="/console/broadcasts/${b.id}">${b.name ?? b.subject ?? b.id}</a></td>
              <td>${stateBadge(b.status)}</td>
              <td class="num">${b.count_recipients}</td>
              <td class="num">
                ${b.count_sent}${
                  b.count_canceled > 0
                    ? html`<br /><span class="muted" data-canceled="${b.count_canceled}"
                          >${b.count_canceled} canceled</span
                        >`
                    : ''
                }
              </td>
              <td class="num">${b.count_skipped_unsubscribed + b.count_skipped_suppressed + b.count_skipped_topic}</td>
              <td class="num">${b.count_failed}</td>
              <td class="nowrap">${when(b.created_at)}</td>
            </tr>`,
        ),
        { label: 'Broadcasts' },
      )
    : card(emptyState(`No ${mode} broadcasts yet.`, html`Create one with <code>POST /api/v1/broadcasts</code>.`));
  show(ctx, session, { title: 'Broadcasts', active: ACTIVE, actions: toggle, body: list });
}

async function loadBroadcast(ctx: ApiContext, session: SessionRow): Promise<BroadcastRow> {
  const id = ctx.params.id ?? '';
  if (!isId(id, 'bc')) throw notFound('Broadcast');
  for (const mode of MODES) {
    const b = await getBroadcast(ctx.deps.sql, scope(session, mode), id);
    if (b) return b;
  }
  throw notFound('Broadcast');
}

async function progressBlock(ctx: ApiContext, b: BroadcastRow): Promise<Safe> {
  const p = await broadcastProgress(ctx.deps.sql, b.id);
  return stats(
    [
      ['Queued', p.queued],
      ['Sent', p.sent],
      ['Delivered', p.delivered],
      ['Bounced', p.bounced],
      ['Opened', p.opened],
    ],
    html`data-progress`,
  );
}

async function broadcastPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const b = await loadBroadcast(ctx, session);
  const progress = await progressBlock(ctx, b);
  const live = running(b) ? html`data-live="/console/broadcasts/${b.id}/progress" data-every="5"` : html``;
  show(ctx, session, {
    title: b.name ?? b.subject ?? 'Broadcast',
    active: ACTIVE,
    lead: html`${stateBadge(b.status)} ${b.mode === 'test' ? badge('test', 'neutral') : ''}
    ${running(b) ? html`<a href="/console/broadcasts/${b.id}">Refresh</a>` : ''}`,
    actions:
      session.role === 'admin' && running(b)
        ? html`<a class="btn danger" href="/console/broadcasts/${b.id}/cancel">Cancel broadcast…</a>`
        : undefined,
    body: html`${card(html`<div ${live} aria-live="polite">${progress}</div>`, { title: 'Progress' })}
    ${card(
      details([
        ['Id', html`<code>${b.id}</code>`],
        ['From', b.from_address],
        ['Subject', b.subject],
        ['Segment', b.segment_id ? html`<a href="/console/segments/${b.segment_id}">${b.segment_id}</a>` : null],
        ['Template', b.template_id ? html`<a href="/console/templates/${b.template_id}">${b.template_id}</a>` : null],
        ['Recipients', b.count_recipients],
        [
          'Messages created',
          html`${b.count_sent}${
            b.count_sent > 0
              ? html` ·
                  <a href="${hrefWith('/console/emails', { mode: b.mode, tag: `broadcast_id=${b.id}` })}">see them</a>`
              : ''
          }`,
        ],
        ['Skipped (unsubscribed)', b.count_skipped_unsubscribed],
        ['Skipped (suppressed)', b.count_skipped_suppressed],
        ['Skipped (topic)', b.count_skipped_topic],
        ['Failed', b.count_failed],
        ['Canceled before delivery', b.count_canceled],
        ['Scheduled', b.scheduled_at ? when(b.scheduled_at) : null],
        ['Started', b.started_at ? when(b.started_at) : null],
        ['Finished', b.sent_at ? when(b.sent_at) : null],
        ['Created', when(b.created_at)],
      ]),
      { title: 'Broadcast' },
    )}`,
  });
}

/** The progress block alone, for the page's live refresh. */
async function progressFragment(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const b = await loadBroadcast(ctx, session);
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('x-broadcast-status', b.status);
  ctx.body = (await progressBlock(ctx, b)).value;
}

async function cancelConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const b = await loadBroadcast(ctx, session);
  if (!running(b)) throw notCancelable(b);
  confirmPage(ctx, session, {
    title: 'Cancel this broadcast?',
    active: ACTIVE,
    question: html`<strong>${b.name ?? b.subject ?? b.id}</strong> is ${b.status}. Canceling it stops it: no more of its
      messages are created, and those not yet handed to delivery are not sent. Messages already sent stay sent.`,
    action: `/console/broadcasts/${b.id}/cancel`,
    confirmLabel: 'Cancel broadcast',
    back: `/console/broadcasts/${b.id}`,
    danger: true,
  });
}

function notCancelable(b: BroadcastRow): ApiError {
  return new ApiError(
    'invalid_state',
    `This broadcast is ${b.status}; only a scheduled or sending broadcast can be canceled`,
  );
}

async function cancelAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const b = await loadBroadcast(ctx, session);
  const row = await ctx.deps.sql.begin((tx) => cancelBroadcast(tx, scope(session, b.mode), b.id));
  if (!row) throw notCancelable(b);
  await audit(ctx, session, 'broadcast.canceled', { type: 'broadcast', id: b.id });
  redirect(ctx, `/console/broadcasts/${b.id}`);
}

export const BROADCAST_PAGES: PageRule[] = [
  { method: 'GET', path: '/broadcasts/:id/cancel', role: 'admin', page: cancelConfirm },
  { method: 'POST', path: '/broadcasts/:id/cancel', role: 'admin', page: cancelAction },
  { method: 'GET', path: '/broadcasts', role: 'member', page: broadcastsPage },
  { method: 'GET', path: '/broadcasts/:id', role: 'member', page: broadcastPage },
  { method: 'GET', path: '/broadcasts/:id/progress', role: 'member', page: progressFragment },
];
