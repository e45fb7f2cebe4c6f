// The webhook pages' HTML (api/console/webhooks.ts reads and writes, this file shows): the
// endpoint list with its Add form, an endpoint's page (facts, test and replay forms, the delivery
// log with its filter, the edit form), a delivery's page (attempts, request body), and the
// signing secret shown once. Each page function answers what show() takes.
import type { AttemptRow, ListedDelivery } from '../../shared/db/webhook-deliveries.js';
import type { WebhookRow } from '../../shared/db/webhooks.js';
import type { SessionRow } from '../../shared/db/users.js';
import { EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../../shared/events.js';
import { REPLAY_LIMIT } from '../../shared/webhooks/manage.js';
import { csrfField, html, when, type Safe } from './html.js';
import {
  card,
  checkboxGroup,
  dataTable,
  details,
  doneBanner,
  emptyState,
  hrefWith,
  pager,
  selectField,
  stateBadge,
  tableCard,
  textField,
} from './ui.js';
import { STATUSES, type LogQuery } from './webhooks-form.js';

export const ACTIVE = '/console/webhooks';
/** Deliveries a page of the log shows. */
export const DELIVERIES = 50;

/** What show() takes, but the session. */
export interface PageView {
  title: string;
  active: string;
  body: Safe;
  lead?: Safe;
  actions?: Safe;
  status?: number;
}

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

export function listView(session: SessionRow, hooks: WebhookRow[], deleted: boolean): PageView {
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
  return {
    title: 'Webhooks',
    active: ACTIVE,
    lead: html`Events are POSTed to each enabled endpoint; a failed delivery is retried 7 times over about 28 hours, and
    an endpoint that has not succeeded for 5 days is disabled.`,
    body: html`${doneBanner(deleted ? 'The endpoint is deleted.' : '')}${list}
    ${card(add, { title: 'Add an endpoint' })}`,
  };
}

function secretOnce(secret: string): Safe {
  return html`<p class="banner warn">Copy this signing secret now. It is shown only once and cannot be recovered.</p>
    <div id="new-secret"><code class="token" data-secret>${secret}</code></div>
    <p><button type="button" class="btn" data-copy="#new-secret" hidden>Copy secret</button></p>`;
}

export function createdView(w: WebhookRow): PageView {
  return {
    title: 'Endpoint added',
    active: ACTIVE,
    status: 201,
    body: html`${secretOnce(w.signing_secret)}
      <p>Verify each request's signature header with this secret (see the API documentation).</p>
      <p><a class="btn" href="/console/webhooks/${w.id}">Open the endpoint</a></p>`,
  };
}

export function rotatedView(w: WebhookRow, saved: WebhookRow): PageView {
  return {
    title: 'Secret rotated',
    active: ACTIVE,
    body: html`${secretOnce(saved.signing_secret)}
      <p>The previous secret is still accepted until ${when(saved.previous_secret_expires_at)}.</p>
      <p><a class="btn" href="/console/webhooks/${w.id}">Back to the endpoint</a></p>`,
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
  return html`${card(filter, { title: 'Delivery log' })}${card(table, { cls: 'flush' })}${pager({ newer, older })}`;
}

function isoMinute(d: Date): string {
  return d.toISOString().slice(0, 16);
}

export function endpointView(
  session: SessionRow,
  w: WebhookRow,
  log: { query: LogQuery; rows: ListedDelivery[]; page: { after?: string; before?: string } },
  done: string,
): PageView {
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
  return {
    title: 'Webhook endpoint',
    active: ACTIVE,
    lead: html`<code>${w.url}</code>`,
    actions: html`<a class="btn" href="${base}/rotate">Rotate secret</a>
      <a class="btn danger" href="${base}/delete">Delete</a>`,
    body: html`${doneBanner(done)}
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
      ${deliveryLog(w, log.query, log.rows, log.page)} ${card(edit, { title: 'Edit' })}`,
  };
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

export function deliveryView(w: WebhookRow, d: ListedDelivery & { body: Buffer }, done: string): PageView {
  const base = `/console/webhooks/${w.id}/deliveries/${d.id}`;
  return {
    title: `Delivery of ${d.event_type}`,
    active: ACTIVE,
    lead: html`${stateBadge(d.status)} to <code>${w.url}</code>`,
    actions: html`<a class="btn" href="/console/webhooks/${w.id}">Back to the endpoint</a>
      ${d.status !== 'pending' ? html`<a class="btn primary" href="${base}/replay">Replay</a>` : ''}`,
    body: html`${doneBanner(done)}
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
  };
}
