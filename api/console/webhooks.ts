// Webhook endpoints (admins): the list with an Add form, and one page per endpoint to edit it
// (URL, events, enabled), send a test event, rotate its secret (the new one shown once), delete it,
// read its delivery log (filtered by status and event type) and replay one delivery or every failed
// delivery of a time range. The rules are the API's (shared/webhooks/manage.ts, shared/db/…); each
// change is confirmed and recorded through audit().
import {
  countFailedDeliveries,
  getDelivery,
  listDeliveries,
  type AttemptRow,
  type DeliveryStatus,
  type ListedDelivery,
} from '../../shared/db/webhook-deliveries.js';
import {
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookRow,
} from '../../shared/db/webhooks.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound, validationError } from '../../shared/errors.js';
import { EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../../shared/events.js';
import { isId } from '../../shared/ids.js';
import {
  createEndpoint,
  replayFailed,
  retryDelivery,
  REPLAY_LIMIT,
  sendTestEvent,
} from '../../shared/webhooks/manage.js';
import { checkWebhookUrl, newSigningSecret } from '../../shared/webhooks/rules.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { choice } from './form.js';
import { csrfField, html, when, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import {
  card,
  checkboxGroup,
  dataTable,
  details,
  doneBanner,
  emptyState,
  hrefWith,
  pager,
  queryString,
  selectField,
  stateBadge,
  tableCard,
  textField,
} from './ui.js';

const ENDPOINTS = 100;
const DELIVERIES = 50;
const STATUSES: DeliveryStatus[] = ['pending', 'succeeded', 'failed'];
const ACTIVE = '/console/webhooks';

function endpointState(w: WebhookRow): Safe {
  if (w.status !== 'enabled')
    return html`${stateBadge('disabled')}${w.disabled_reason ? html` <span class="muted">${w.disabled_reason}</span>` : ''}`;
  if (w.failing_since) return html`${stateBadge('failing')} <span class="muted">since ${when(w.failing_since)}</span>`;
  return stateBadge('enabled');
}

/** Every type an endpoint may subscribe to: the API's list (message and organization events). */
function eventOptions(): [string, string][] {
  return WEBHOOK_EVENT_TYPES.map((t): [string, string] => [t, t]);
}

function eventsOf(form: URLSearchParams): string[] {
  const events = [...new Set(form.getAll('events'))];
  const bad = events.find((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (bad !== undefined) throw validationError(`"${bad}" is not an event type`);
  if (events.length === 0) throw validationError('Choose at least one event type');
  return events;
}

function description(form: URLSearchParams): string | null {
  const d = (form.get('description') ?? '').trim();
  if (d.length > 500) throw validationError('Description is longer than 500 characters');
  return d || null;
}

function endpointFields(w: WebhookRow | null): Safe {
  return html`${textField({
    name: 'url',
    label: 'Endpoint URL',
    type: 'url',
    value: w?.url,
    required: true,
    maxlength: 2048,
    placeholder: 'https://example.com/webhooks',
    hint: 'HTTPS; it must answer 2xx within 5 seconds',
  })}
  ${textField({ name: 'description', label: 'Description', value: w?.description, maxlength: 500 })}
  ${checkboxGroup({
    name: 'events',
    legend: 'Events sent to it',
    options: eventOptions(),
    checked: w ? w.events : [...EVENT_TYPES],
  })}`;
}

async function webhooksPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const hooks = (await listWebhooks(ctx.deps.sql, session.org_id, { limit: ENDPOINTS })).slice(0, ENDPOINTS);
  const rows = hooks.map(
    (w) =>
      html`<tr data-webhook="${w.id}">
        <td>
          <a class="row-link" href="/console/webhooks/${w.id}">${w.url}</a><br /><code class="muted">${w.id}</code>
        </td>
        <td>${w.description ?? ''}</td>
        <td>${endpointState(w)}</td>
        <td class="num">${w.events.length === WEBHOOK_EVENT_TYPES.length ? 'all' : w.events.length}</td>
        <td class="nowrap">${when(w.created_at)}</td>
      </tr>`,
  );
  const list = hooks.length
    ? tableCard(['Endpoint', 'Description', 'State', { label: 'Events', num: true }, 'Created'], rows, {
        label: 'Webhook endpoints',
      })
    : card(
        emptyState(
          'No webhook endpoints yet.',
          'Add one below: every event of the organization is then POSTed to it, signed with its secret.',
        ),
      );
  const add = html`<form method="post" action="/console/webhooks" class="stack">
    ${csrfField(session)}${endpointFields(null)}
    <p><button type="submit" class="primary">Add endpoint</button></p>
  </form>`;
  show(ctx, session, {
    title: 'Webhooks',
    active: ACTIVE,
    lead: html`Events are POSTed to each enabled endpoint and retried for up to a day when it fails.`,
    body: html`${doneBanner(queryString(ctx.query, 'deleted') ? 'The endpoint is deleted.' : '')}${list}
    ${card(add, { title: 'Add an endpoint' })}`,
  });
}

function secretOnce(secret: string): Safe {
  return html`<p class="banner warn">Copy this signing secret now. It is shown only once and cannot be recovered.</p>
    <div id="new-secret"><code class="token" data-secret>${secret}</code></div>
    <p><button type="button" class="btn" data-copy="#new-secret" hidden>Copy secret</button></p>`;
}

async function createAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const w = await createEndpoint(
    ctx.deps.sql,
    ctx.deps.config.webhookAllowPrivate,
    {
      orgId: session.org_id,
      url: (form.get('url') ?? '').trim(),
      events: eventsOf(form),
      description: description(form),
    },
    'Endpoint URL',
  );
  await audit(ctx, session, 'webhook.created', { type: 'webhook', id: w.id }, { url: w.url });
  show(ctx, session, {
    title: 'Endpoint added',
    active: ACTIVE,
    status: 201,
    body: html`${secretOnce(w.signing_secret)}
      <p>Verify each request's signature header with this secret (see the API documentation).</p>
      <p><a class="btn" href="/console/webhooks/${w.id}">Open the endpoint</a></p>`,
  });
}

async function loadEndpoint(ctx: ApiContext, session: SessionRow): Promise<WebhookRow> {
  const id = ctx.params.id ?? '';
  const w = isId(id, 'wh') ? await getWebhook(ctx.deps.sql, session.org_id, id) : null;
  if (!w) throw notFound('Webhook');
  return w;
}

interface LogQuery {
  status: DeliveryStatus | '';
  type: string;
}

function logQuery(query: Record<string, unknown>): LogQuery {
  const status = queryString(query, 'status') as DeliveryStatus;
  const type = queryString(query, 'type');
  return {
    status: STATUSES.includes(status) ? status : '',
    type: (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type) ? type : '',
  };
}

function deliveryRow(w: WebhookRow, d: ListedDelivery): Safe {
  return html`<tr data-delivery="${d.id}">
    <td class="nowrap"><a href="/console/webhooks/${w.id}/deliveries/${d.id}">${when(d.created_at)}</a></td>
    <td>${d.event_type}</td>
    <td>${stateBadge(d.status)}</td>
    <td class="num">${d.attempts}</td>
    <td>${d.last_status_code ?? ''}</td>
    <td class="clip">${d.last_error ?? ''}</td>
    <td class="nowrap">${d.next_attempt_at && d.status === 'pending' ? when(d.next_attempt_at) : ''}</td>
  </tr>`;
}

function deliveryLog(
  ctx: ApiContext,
  w: WebhookRow,
  q: LogQuery,
  rows: ListedDelivery[],
  page: { after?: string; before?: string },
): Safe {
  const shown = rows.slice(0, DELIVERIES);
  const more = rows.length > DELIVERIES;
  const base = `/console/webhooks/${w.id}`;
  const link = (c: Record<string, string>) => hrefWith(base, { status: q.status, type: q.type, ...c });
  const older = shown.length && (more || page.before) ? link({ after: shown.at(-1)!.id }) : null;
  const newer = shown.length && (page.after || (page.before && more)) ? link({ before: shown[0]!.id }) : null;
  const filter = html`<form method="get" action="${base}" class="filters" role="search" aria-label="Filter deliveries">
    ${selectField({
      name: 'status',
      label: 'Status',
      value: q.status,
      options: [['', 'Any'], ...STATUSES.map((s): [string, string] => [s, s])],
    })}
    ${selectField({ name: 'type', label: 'Event type', value: q.type, options: [['', 'Any'], ...eventOptions()] })}
    <div class="buttons">
      <button type="submit" class="primary">Filter</button>
      <a class="btn" href="${base}">Clear</a>
    </div>
  </form>`;
  const table = shown.length
    ? dataTable(
        ['Created', 'Event', 'Status', { label: 'Attempts', num: true }, 'HTTP status', 'Last error', 'Next attempt'],
        shown.map((d) => deliveryRow(w, d)),
        { label: 'Deliveries' },
      )
    : q.status || q.type
      ? emptyState('No delivery matches.', 'Choose another status or event type, or clear the filter.')
      : emptyState('No deliveries yet.', 'Send a test event to see one here.');
  void ctx;
  return html`${card(filter, { title: 'Delivery log' })}${card(table, { cls: 'flush' })}${pager({ newer, older })}`;
}

function isoMinute(d: Date): string {
  return d.toISOString().slice(0, 16);
}

async function endpointPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const q = logQuery(ctx.query);
  const cursor = (k: string) => {
    const v = queryString(ctx.query, k);
    return isId(v, 'dlv') ? v : undefined;
  };
  const page = { after: cursor('after'), before: cursor('before') };
  const rows = await listDeliveries(ctx.deps.sql, w.id, {
    limit: DELIVERIES,
    ...page,
    status: q.status || undefined,
    eventType: q.type || undefined,
  });
  const base = `/console/webhooks/${w.id}`;
  const info = details([
    ['Id', html`<code>${w.id}</code>`],
    ['State', endpointState(w)],
    ['Events', w.events.join(', ')],
    ['Description', w.description],
    ['Created', when(w.created_at)],
    [
      'Previous secret',
      w.previous_secret_expires_at && w.previous_secret_expires_at > new Date()
        ? html`still accepted until ${when(w.previous_secret_expires_at)}`
        : null,
    ],
  ]);
  const edit = html`<form method="post" action="${base}" class="stack">
    ${csrfField(session)}${endpointFields(w)}
    ${selectField({
      name: 'status',
      label: 'State',
      value: w.status,
      options: [
        ['enabled', 'Enabled'],
        ['disabled', 'Disabled'],
      ],
    })}
    <p><button type="submit" class="primary">Save changes</button></p>
  </form>`;
  const test = html`<form method="post" action="${base}/test" class="row-form">
    ${csrfField(session)}
    ${selectField({ name: 'type', label: 'Test event type', value: 'email.delivered', options: eventOptions() })}
    <button type="submit">Send test event</button>
  </form>`;
  const now = new Date();
  const replay = html`<form method="get" action="${base}/replay" class="row-form">
    ${textField({ name: 'from', label: 'Failed from (UTC)', type: 'datetime-local', value: isoMinute(new Date(now.getTime() - 86_400_000)), required: true })}
    ${textField({ name: 'to', label: 'Failed until (UTC)', type: 'datetime-local', value: isoMinute(new Date(now.getTime() + 60_000)), required: true })}
    <button type="submit">Replay failed deliveries…</button>
  </form>`;
  show(ctx, session, {
    title: 'Webhook endpoint',
    active: ACTIVE,
    lead: html`<code>${w.url}</code>`,
    actions: html`<a class="btn" href="${base}/rotate">Rotate secret</a>
      <a class="btn danger" href="${base}/delete">Delete</a>`,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}
      <div class="grid-2">
        ${card(info, { title: 'Endpoint' })}
        ${card(
          html`${test}
            <h3>Replay</h3>
            <p class="muted">Sends every failed delivery created in this range again (up to ${REPLAY_LIMIT}).</p>
            ${replay}`,
          { title: 'Test and replay' },
        )}
      </div>
      ${deliveryLog(ctx, w, q, rows, page)} ${card(edit, { title: 'Edit' })}`,
  });
}

async function updateAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const url = checkWebhookUrl((form.get('url') ?? '').trim(), ctx.deps.config.webhookAllowPrivate, 'Endpoint URL');
  const status = choice(form, 'status', 'State', ['enabled', 'disabled'] as const);
  const events = eventsOf(form);
  const saved = await updateWebhook(ctx.deps.sql, session.org_id, w.id, {
    url,
    events,
    description: description(form),
    status,
  });
  if (!saved) throw notFound('Webhook');
  await audit(ctx, session, 'webhook.updated', { type: 'webhook', id: w.id }, { url, events, status });
  redirect(ctx, hrefWith(`/console/webhooks/${w.id}`, { done: 'Changes saved.' }));
}

async function testAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const type = choice(form, 'type', 'Test event type', WEBHOOK_EVENT_TYPES);
  const { delivery } = await sendTestEvent(ctx.deps, w, type);
  await audit(
    ctx,
    session,
    'webhook.test_sent',
    { type: 'webhook', id: w.id },
    { deliveryId: delivery.id, eventType: type },
  );
  redirect(ctx, hrefWith(`/console/webhooks/${w.id}`, { done: `A test ${type} event is on its way.` }));
}

async function rotateConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  confirmPage(ctx, session, {
    title: 'Rotate the signing secret?',
    active: ACTIVE,
    question: html`A new secret is made for <code>${w.url}</code> and shown once. Requests are signed with both secrets
      for 24 hours, so that the receiver can switch over.`,
    action: `/console/webhooks/${w.id}/rotate`,
    confirmLabel: 'Rotate secret',
    back: `/console/webhooks/${w.id}`,
  });
}

async function rotateAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const saved = await rotateWebhookSecret(ctx.deps.sql, session.org_id, w.id, newSigningSecret(), 86_400);
  if (!saved) throw notFound('Webhook');
  await audit(ctx, session, 'webhook.secret_rotated', { type: 'webhook', id: w.id });
  show(ctx, session, {
    title: 'Secret rotated',
    active: ACTIVE,
    body: html`${secretOnce(saved.signing_secret)}
      <p>The previous secret is still accepted until ${when(saved.previous_secret_expires_at)}.</p>
      <p><a class="btn" href="/console/webhooks/${w.id}">Back to the endpoint</a></p>`,
  });
}

async function deleteConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  confirmPage(ctx, session, {
    title: 'Delete this endpoint?',
    active: ACTIVE,
    question: html`<code>${w.url}</code> stops receiving events, and its delivery log is deleted with it.`,
    action: `/console/webhooks/${w.id}/delete`,
    confirmLabel: 'Delete endpoint',
    back: `/console/webhooks/${w.id}`,
    danger: true,
  });
}

async function deleteAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  if (!(await deleteWebhook(ctx.deps.sql, session.org_id, w.id))) throw notFound('Webhook');
  await audit(ctx, session, 'webhook.deleted', { type: 'webhook', id: w.id }, { url: w.url });
  redirect(ctx, '/console/webhooks?deleted=1');
}

/** Attempts come from json_agg: their times are strings. */
function attemptItem(raw: AttemptRow): Safe {
  const a = { ...raw, started_at: new Date(raw.started_at), finished_at: raw.finished_at && new Date(raw.finished_at) };
  const ok = a.status_code !== null && a.status_code >= 200 && a.status_code < 300;
  const state = a.finished_at === null ? 'interrupted' : ok ? 'succeeded' : 'failed';
  return html`<li data-attempt="${a.attempt}">
    <div class="ev-head">${stateBadge(state)} <strong>attempt ${a.attempt}</strong> ${when(a.started_at)}</div>
    <div class="ev-facts">
      ${a.status_code !== null ? html`HTTP ${a.status_code}` : 'no answer'}${a.latency_ms !== null ? html` · ${a.latency_ms} ms` : ''}
      ${a.error ? html`<br />${a.error}` : ''}
    </div>
    ${
      a.response_body
        ? html`<details class="more">
            <summary>Response body (first 1 KB)</summary>
            <pre class="body" tabindex="0" data-response>${a.response_body}</pre>
          </details>`
        : ''
    }
  </li>`;
}

function prettyBody(body: Buffer): string {
  const text = body.toString('utf8');
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

async function loadDelivery(ctx: ApiContext, w: WebhookRow) {
  const id = ctx.params.delivery_id ?? '';
  const d = isId(id, 'dlv') ? await getDelivery(ctx.deps.sql, w.id, id) : null;
  if (!d) throw notFound('Delivery');
  return d;
}

async function deliveryPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const d = await loadDelivery(ctx, w);
  const base = `/console/webhooks/${w.id}/deliveries/${d.id}`;
  show(ctx, session, {
    title: `Delivery of ${d.event_type}`,
    active: ACTIVE,
    lead: html`${stateBadge(d.status)} to <code>${w.url}</code>`,
    actions: html`<a class="btn" href="/console/webhooks/${w.id}">Back to the endpoint</a>
      ${d.status !== 'pending' ? html`<a class="btn primary" href="${base}/replay">Replay</a>` : ''}`,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}
    ${card(
      details([
        ['Delivery id', html`<code>${d.id}</code>`],
        ['Event id', html`<code>${d.event_id}</code>`],
        ['Created', when(d.created_at)],
        ['Attempts', d.attempts],
        ['Next attempt', d.status === 'pending' ? when(d.next_attempt_at, 'now') : null],
        ['Completed', d.completed_at ? when(d.completed_at) : null],
      ]),
      { title: 'Delivery' },
    )}
    ${card(
      d.history.length
        ? html`<ol class="timeline">
            ${d.history.map(attemptItem)}
          </ol>`
        : emptyState('No attempt yet.', 'The first attempt starts within seconds.'),
      { title: 'Attempts' },
    )}
    ${card(html`<pre class="body" tabindex="0" data-request>${prettyBody(d.body)}</pre>`, { title: 'Request body' })}`,
  });
}

async function replayOneConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const d = await loadDelivery(ctx, w);
  confirmPage(ctx, session, {
    title: 'Replay this delivery?',
    active: ACTIVE,
    question: html`The same ${d.event_type} body (same delivery id) is POSTed to <code>${w.url}</code> again now.`,
    action: `/console/webhooks/${w.id}/deliveries/${d.id}/replay`,
    confirmLabel: 'Replay delivery',
    back: `/console/webhooks/${w.id}/deliveries/${d.id}`,
  });
}

async function replayOneAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const d = await retryDelivery(ctx.deps, w, ctx.params.delivery_id ?? '');
  await audit(ctx, session, 'webhook_delivery.replayed', { type: 'webhook_delivery', id: d.id }, { webhookId: w.id });
  redirect(ctx, hrefWith(`/console/webhooks/${w.id}/deliveries/${d.id}`, { done: 'Replay queued.' }));
}

/** A datetime-local value (read as UTC) or an ISO time. */
function instant(raw: string | null, label: string): Date {
  const v = (raw ?? '').trim();
  const d = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? new Date(`${v}Z`) : new Date(v);
  if (!v || Number.isNaN(d.getTime())) throw validationError(`${label} is not a date and time`);
  return d;
}

function replayRange(params: { get(k: string): string | null }): { from: Date; to: Date } {
  const from = instant(params.get('from'), 'Failed from');
  const to = instant(params.get('to'), 'Failed until');
  if (to <= from) throw validationError('Failed until must be after Failed from');
  return { from, to };
}

async function replayConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const q = new URLSearchParams(ctx.querystring);
  const range = replayRange(q);
  const n = await countFailedDeliveries(ctx.deps.sql, w.id, range);
  confirmPage(ctx, session, {
    title: 'Replay failed deliveries?',
    active: ACTIVE,
    question: html`${n} failed ${n === 1 ? 'delivery' : 'deliveries'} to <code>${w.url}</code> created between
      ${when(range.from)} and ${when(range.to)} ${n > REPLAY_LIMIT ? html`(the first ${REPLAY_LIMIT})` : ''} will be
      sent again now.`,
    action: `/console/webhooks/${w.id}/replay`,
    confirmLabel: 'Replay failed deliveries',
    back: `/console/webhooks/${w.id}`,
    fields: { from: range.from.toISOString(), to: range.to.toISOString() },
  });
}

async function replayAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const range = replayRange(form);
  const n = await replayFailed(ctx.deps, w, range);
  await audit(
    ctx,
    session,
    'webhook.deliveries_replayed',
    { type: 'webhook', id: w.id },
    {
      from: range.from.toISOString(),
      to: range.to.toISOString(),
      count: n,
    },
  );
  redirect(
    ctx,
    hrefWith(`/console/webhooks/${w.id}`, { done: `${n} failed ${n === 1 ? 'delivery' : 'deliveries'} queued again.` }),
  );
}

export const WEBHOOK_PAGES: PageRule[] = [
  { method: 'GET', path: '/webhooks', role: 'admin', page: webhooksPage },
  { method: 'POST', path: '/webhooks', role: 'admin', page: createAction },
  { method: 'GET', path: '/webhooks/:id', role: 'admin', page: endpointPage },
  { method: 'POST', path: '/webhooks/:id', role: 'admin', page: updateAction },
  { method: 'POST', path: '/webhooks/:id/test', role: 'admin', page: testAction },
  { method: 'GET', path: '/webhooks/:id/rotate', role: 'admin', page: rotateConfirm },
  { method: 'POST', path: '/webhooks/:id/rotate', role: 'admin', page: rotateAction },
  { method: 'GET', path: '/webhooks/:id/delete', role: 'admin', page: deleteConfirm },
  { method: 'POST', path: '/webhooks/:id/delete', role: 'admin', page: deleteAction },
  { method: 'GET', path: '/webhooks/:id/replay', role: 'admin', page: replayConfirm },
  { method: 'POST', path: '/webhooks/:id/replay', role: 'admin', page: replayAction },
  { method: 'GET', path: '/webhooks/:id/deliveries/:delivery_id', role: 'admin', page: deliveryPage },
  { method: 'GET', path: '/webhooks/:id/deliveries/:delivery_id/replay', role: 'admin', page: replayOneConfirm },
  { method: 'POST', path: '/webhooks/:id/deliveries/:delivery_id/replay', role: 'admin', page: replayOneAction },
];
