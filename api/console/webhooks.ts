// Webhook endpoints (admins): the list with an Add form, and one page per endpoint to edit it
// (URL, events, enabled), send a test event, rotate its secret (the new one shown once), delete it,
// read its delivery log (filtered by status and event type) and replay one delivery or every failed
// delivery of a time range. This file reads and writes (the rules are the API's:
// shared/webhooks/manage.ts, shared/db/…) and records each change through audit(); the checks of
// forms and queries are webhooks-form.ts, the HTML webhooks-view.ts.
import { countFailedDeliveries, getDelivery, listDeliveries } from '../../shared/db/webhook-deliveries.js';
import {
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookRow,
} from '../../shared/db/webhooks.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound } from '../../shared/errors.js';
import { WEBHOOK_EVENT_TYPES } from '../../shared/events.js';
import { isId } from '../../shared/ids.js';
import {
  createEndpoint,
  replayFailed,
  retryDelivery,
  REPLAY_LIMIT,
  sendTestEvent,
} from '../../shared/webhooks/manage.js';
import { secretBox } from '../../shared/secrets.js';
import { checkWebhookUrl, newSigningSecret } from '../../shared/webhooks/rules.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { choice } from './form.js';
import { html, when } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { hrefWith, queryString } from './ui.js';
import { description, eventsOf, logQuery, replayRange } from './webhooks-form.js';
import { ACTIVE, createdView, DELIVERIES, deliveryView, endpointView, listView, rotatedView } from './webhooks-view.js';

const ENDPOINTS = 100;

async function webhooksPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const hooks = (await listWebhooks(ctx.deps.sql, session.org_id, { limit: ENDPOINTS })).slice(0, ENDPOINTS);
  show(ctx, session, listView(session, hooks, Boolean(queryString(ctx.query, 'deleted'))));
}

async function createAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const w = await createEndpoint(
    ctx.deps.sql,
    secretBox(ctx.deps.config),
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
  show(ctx, session, createdView(w));
}

async function loadEndpoint(ctx: ApiContext, session: SessionRow): Promise<WebhookRow> {
  const id = ctx.params.id ?? '';
  const w = isId(id, 'wh') ? await getWebhook(ctx.deps.sql, session.org_id, id) : null;
  if (!w) throw notFound('Webhook');
  return w;
}

async function endpointPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const query = logQuery(ctx.query);
  const cursor = (k: string) => {
    const v = queryString(ctx.query, k);
    return isId(v, 'dlv') ? v : undefined;
  };
  const page = { after: cursor('after'), before: cursor('before') };
  const rows = await listDeliveries(ctx.deps.sql, w.id, {
    limit: DELIVERIES,
    ...page,
    status: query.status || undefined,
    eventType: query.type || undefined,
  });
  show(ctx, session, endpointView(session, w, { query, rows, page }, queryString(ctx.query, 'done')));
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
  const saved = await rotateWebhookSecret(
    ctx.deps.sql,
    secretBox(ctx.deps.config),
    session.org_id,
    w.id,
    newSigningSecret(),
    86_400,
  );
  if (!saved) throw notFound('Webhook');
  await audit(ctx, session, 'webhook.secret_rotated', { type: 'webhook', id: w.id });
  show(ctx, session, rotatedView(w, saved));
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

async function loadDelivery(ctx: ApiContext, w: WebhookRow) {
  const id = ctx.params.delivery_id ?? '';
  const d = isId(id, 'dlv') ? await getDelivery(ctx.deps.sql, w.id, id) : null;
  if (!d) throw notFound('Delivery');
  return d;
}

async function deliveryPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const w = await loadEndpoint(ctx, session);
  const d = await loadDelivery(ctx, w);
  show(ctx, session, deliveryView(w, d, queryString(ctx.query, 'done')));
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
