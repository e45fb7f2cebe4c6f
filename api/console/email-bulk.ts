// What the Emails page does to a whole filtered list: export it as CSV (everyone), and, for
// admins, retry every deferred recipient, cancel every message still cancelable, or remove the
// suppressions that block its recipients. Each bulk action names how many it will touch on a
// confirmation page whose form carries the filters, and then does to each message what its own
// page's action does (./email-actions.ts: the same functions, the same audit rows), for at most
// BULK_MAX messages, newest first.
import { listRecipientDetails, getOrgEmail } from '../../shared/db/email-detail.js';
import { searchEmails, type EmailListRow, type EmailSearch } from '../../shared/db/email-search.js';
import type { EmailRow } from '../../shared/db/emails.js';
import { suppressionsOf, type SuppressionRow } from '../../shared/db/suppressions.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound } from '../../shared/errors.js';
import { csvDownload } from '../csv-download.js';
import type { ApiContext } from '../types.js';
import { cancelable } from './email-load.js';
import { cancelOne, retryOne, unsuppress } from './email-actions.js';
import { FILTER_PARAMS, listHref, parseFilters, type FilterParams } from './email-filters.js';
import { html } from './html.js';
import { hrefWith } from './ui.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';

/** A bulk action touches at most this many messages (the newest that match); run it again for more. */
export const BULK_MAX = 500;
/** An export holds at most this many messages, newest first. */
export const EXPORT_MAX = 100_000;
const EXPORT_PAGE = 1000;

const EXPORT_COLUMNS = [
  'id',
  'created_at',
  'mode',
  'from',
  'first_recipient',
  'recipients',
  'subject',
  'stream',
  'status',
  'last_event_at',
];

/** Every message of the search, newest first, page by page (at most `max`). */
async function* matching(ctx: ApiContext, search: EmailSearch, max: number): AsyncGenerator<EmailListRow> {
  let after: string | undefined;
  let n = 0;
  while (n < max) {
    const limit = Math.min(EXPORT_PAGE, max - n);
    const rows = (await searchEmails(ctx.deps.sql, search, { limit, after })).slice(0, limit);
    for (const r of rows) yield r;
    n += rows.length;
    if (rows.length < limit) return;
    after = rows.at(-1)!.id;
  }
}

function searchOf(session: SessionRow, query: Record<string, unknown>): { search: EmailSearch; params: FilterParams } {
  const f = parseFilters(query);
  return { search: { ...f.search, orgId: session.org_id }, params: f.params };
}

async function exportAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { search } = searchOf(session, ctx.query);
  async function* records() {
    for await (const e of matching(ctx, search, EXPORT_MAX)) {
      yield [
        e.id,
        e.created_at,
        e.mode,
        e.from_address,
        e.first_recipient,
        e.recipient_count,
        e.subject,
        e.stream,
        e.state,
        e.last_event_at,
      ];
    }
  }
  const name = `emails-${search.mode}-${new Date().toISOString().slice(0, 10)}.csv`;
  csvDownload(ctx, name, EXPORT_COLUMNS, records(), { event: 'CONSOLE_EMAIL_EXPORT_FAILED' });
}

interface Plan {
  /** Messages to cancel. */
  cancel: EmailRow[];
  /** Deferred recipients to retry, with their message. */
  retry: { email: EmailRow; recipient: Awaited<ReturnType<typeof listRecipientDetails>>[number] }[];
  /** Suppression rows that block recipients of the messages. */
  unsuppress: SuppressionRow[];
  /** Messages looked at. */
  scanned: number;
}

type BulkAction = 'retry' | 'cancel' | 'unsuppress';

const ACTIONS: Record<BulkAction, { title: string; label: string; danger: boolean }> = {
  retry: { title: 'Retry every deferred recipient now?', label: 'Retry now', danger: false },
  cancel: { title: 'Cancel every matching email?', label: 'Cancel emails', danger: true },
  unsuppress: { title: 'Remove these suppressions?', label: 'Remove suppressions', danger: true },
};

function actionOf(ctx: ApiContext): BulkAction {
  const a = ctx.params.action ?? '';
  if (a === 'retry' || a === 'cancel' || a === 'unsuppress') return a;
  throw notFound('Bulk action');
}

/** What the action would do to the matching messages now. */
async function plan(ctx: ApiContext, session: SessionRow, search: EmailSearch, action: BulkAction): Promise<Plan> {
  const p: Plan = { cancel: [], retry: [], unsuppress: [], scanned: 0 };
  const seen = new Set<string>();
  for await (const row of matching(ctx, search, BULK_MAX)) {
    p.scanned++;
    if (action === 'cancel') {
      if (row.state !== 'scheduled' && row.state !== 'queued') continue;
      const email = await getOrgEmail(ctx.deps.sql, session.org_id, row.id);
      if (email && cancelable(email)) p.cancel.push(email);
      continue;
    }
    const email = await getOrgEmail(ctx.deps.sql, session.org_id, row.id);
    if (!email) continue;
    const recipients = await listRecipientDetails(ctx.deps.sql, email.id);
    if (action === 'retry') {
      for (const r of recipients) {
        if (r.status === 'delivery_delayed' && !r.attempt_started_at) p.retry.push({ email, recipient: r });
      }
    } else {
      const rows = await suppressionsOf(
        ctx.deps.sql,
        session.org_id,
        email.domain_id,
        recipients.map((r) => r.email),
      );
      for (const s of rows) {
        if (!seen.has(s.id)) p.unsuppress.push(s);
        seen.add(s.id);
      }
    }
  }
  return p;
}

function count(p: Plan, action: BulkAction): number {
  return action === 'cancel' ? p.cancel.length : action === 'retry' ? p.retry.length : p.unsuppress.length;
}

function plural(n: number, one: string, many: string): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}

async function bulkConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const action = actionOf(ctx);
  const { search, params } = searchOf(session, ctx.query);
  const p = await plan(ctx, session, search, action);
  const n = count(p, action);
  const back = listHref(params);
  const scope = html`Of the ${p.scanned >= BULK_MAX ? `newest ${BULK_MAX}` : plural(p.scanned, 'message', 'messages')}
  this filter matches${p.scanned >= BULK_MAX ? ' (run it again for older ones)' : ''},`;
  const what = {
    retry: html`${scope}
      <strong data-bulk-count="${n}">${plural(n, 'recipient is', 'recipients are')}</strong> deferred. Retry now
      attempts each at once; mail is sent to them.`,
    cancel: html`${scope} <strong data-bulk-count="${n}">${plural(n, 'email is', 'emails are')}</strong> scheduled or
      queued. Canceling means they are never sent; this cannot be undone.`,
    unsuppress: html`${scope}
      <strong data-bulk-count="${n}">${plural(n, 'suppression blocks', 'suppressions block')}</strong> their
      recipients${p.unsuppress.length ? html` (${p.unsuppress.slice(0, 5).map((s, i) => html`${i ? ', ' : ''}${s.email ?? s.pattern ?? s.id}`)}${p.unsuppress.length > 5 ? ', …' : ''})` : ''}.
      Removing them lets live mail reach those addresses again; these messages are not sent again.`,
  }[action];
  if (n === 0) {
    show(ctx, session, {
      title: 'Nothing to do',
      active: '/console/emails',
      body: html`<section class="card confirm">
        <p>${what}</p>
        <p><a class="btn" href="${back}">Back to the list</a></p>
      </section>`,
    });
    return;
  }
  const fields: Record<string, string> = {};
  for (const k of FILTER_PARAMS) if (params[k]) fields[k] = params[k];
  confirmPage(ctx, session, {
    title: ACTIONS[action].title,
    active: '/console/emails',
    question: what,
    action: `/console/emails/bulk/${action}`,
    confirmLabel: ACTIONS[action].label,
    back,
    danger: ACTIONS[action].danger,
    fields,
  });
}

async function bulkAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const action = actionOf(ctx);
  const query: Record<string, string> = {};
  for (const k of FILTER_PARAMS) {
    const v = form.get(k);
    if (v) query[k] = v;
  }
  const { search, params } = searchOf(session, query);
  const p = await plan(ctx, session, search, action);
  const detail = { bulk: true };
  let done = 0;
  if (action === 'cancel') {
    for (const e of p.cancel) if (await cancelOne(ctx, session, e, detail)) done++;
  } else if (action === 'retry') {
    for (const { email, recipient } of p.retry) if (await retryOne(ctx, session, email, recipient, detail)) done++;
  } else {
    done = await unsuppress(ctx, session, p.unsuppress, detail);
  }
  const news = {
    retry: `${plural(done, 'recipient', 'recipients')} retried now.`,
    cancel: `${plural(done, 'email', 'emails')} canceled.`,
    unsuppress: `${plural(done, 'suppression', 'suppressions')} removed.`,
  }[action];
  redirect(ctx, hrefWith('/console/emails', { ...params, done: news }));
}

/** Before `/emails/:id`, so that these paths are not taken for an id. */
export const EMAIL_BULK_PAGES: PageRule[] = [
  { method: 'GET', path: '/emails/export', role: 'member', page: exportAction },
  { method: 'GET', path: '/emails/bulk/:action', role: 'admin', page: bulkConfirm },
  { method: 'POST', path: '/emails/bulk/:action', role: 'admin', page: bulkAction },
];
