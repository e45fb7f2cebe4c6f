// Webhook endpoints (admins) and each one's most recent deliveries, with their attempts.
import { listDeliveries, type ListedDelivery } from '../../shared/db/webhook-deliveries.js';
import { listWebhooks, type WebhookRow } from '../../shared/db/webhooks.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';

const ENDPOINTS = 50;
const RECENT = 10;

function deliveriesTable(rows: ListedDelivery[]): Safe {
  if (rows.length === 0) return html`<p class="muted">No deliveries yet.</p>`;
  const body = rows.map(
    (d) =>
      html`<tr>
        <td>${when(d.created_at)}</td>
        <td>${d.event_type}</td>
        <td>${d.status}</td>
        <td class="num">${d.attempts}</td>
        <td>${d.last_status_code ?? ''}</td>
        <td>${d.last_error ?? ''}</td>
        <td>${d.next_attempt_at && d.status === 'pending' ? when(d.next_attempt_at) : ''}</td>
      </tr>`,
  );
  return html`<table>
    <thead>
      <tr>
        <th>Created</th>
        <th>Event</th>
        <th>Status</th>
        <th class="num">Attempts</th>
        <th>Last HTTP status</th>
        <th>Last error</th>
        <th>Next attempt</th>
      </tr>
    </thead>
    <tbody>
      ${body}
    </tbody>
  </table>`;
}

function endpoint(w: WebhookRow, deliveries: ListedDelivery[]): Safe {
  const state =
    w.status === 'enabled'
      ? w.failing_since
        ? html`enabled, failing since ${when(w.failing_since)}`
        : 'enabled'
      : html`disabled${w.disabled_reason ? html` (${w.disabled_reason})` : ''}`;
  return html`<section data-webhook="${w.id}">
    <h2><code>${w.url}</code></h2>
    <p>
      ${w.description ?? ''} <code class="muted">${w.id}</code> · ${state} · events: ${w.events.join(', ') || 'none'}
    </p>
    ${deliveriesTable(deliveries)}
  </section>`;
}

export async function webhooksPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const hooks = (await listWebhooks(sql, session.org_id, { limit: ENDPOINTS })).slice(0, ENDPOINTS);
  const recent = await Promise.all(
    hooks.map(async (w) => (await listDeliveries(sql, w.id, { limit: RECENT })).slice(0, RECENT)),
  );
  show(ctx, session, {
    title: 'Webhooks',
    active: '/console/webhooks',
    body: hooks.length
      ? html`${hooks.map((w, i) => endpoint(w, recent[i]!))}`
      : html`<p>No endpoints yet. Create one with <code>POST /api/v1/webhooks</code>.</p>`,
  });
}
