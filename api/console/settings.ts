// The organization's settings (admins), the console's side of PATCH /organization: pause and
// resume sending with a reason, the tracking defaults, and the alert rules that pause sending (or
// only warn) when the bounce or complaint rate passes a threshold. Every change drops the org's
// cached auth contexts (each web process reads the pause from them) and is recorded by audit().
import {
  getOrg,
  getOrgForUpdate,
  updateOrgSettings,
  type AlertRule,
  type OrgRow,
  type OrgSettingsPatch,
} from '../../shared/db/orgs.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound, validationError } from '../../shared/errors.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { choice, field } from './form.js';
import { csrfField, html, postButton, type Safe } from './html.js';
import { redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { requireForm } from './totp.js';
import { badge, card, doneBanner, emptyState, hrefWith, queryString, selectField, tableCard, textField } from './ui.js';

const ACTIVE = '/console/settings';
const MAX_RULES = 20;

async function save(ctx: ApiContext, session: SessionRow, patch: (o: OrgRow) => OrgSettingsPatch): Promise<OrgRow> {
  const saved = await ctx.deps.sql.begin(async (tx) => {
    const current = await getOrgForUpdate(tx, session.org_id);
    if (!current) throw notFound('Organization');
    return await updateOrgSettings(tx, current.id, patch(current));
  });
  if (!saved) throw notFound('Organization');
  await ctx.deps.auth.invalidateOrg(session.org_id);
  return saved;
}

function sendingCard(session: SessionRow, o: OrgRow): Safe {
  if (o.sending_paused) {
    return html`<p data-paused="true">
        ${badge('paused', 'bad')}
        ${o.sending_paused_reason ? html`Reason: ${o.sending_paused_reason}` : 'No reason given.'}
      </p>
      <p class="muted">The API and the SMTP relay refuse new mail with <code>sending_paused</code> until you resume.</p>
      ${postButton(session, '/console/settings/resume', 'Resume sending', undefined, 'primary')}`;
  }
  return html`<p data-paused="false">${badge('sending', 'ok')} The organization may send.</p>
    <form method="post" action="/console/settings/pause" class="row-form">
      ${csrfField(session)}
      ${textField({
        name: 'reason',
        label: 'Reason for pausing',
        required: true,
        maxlength: 500,
        hint: 'Shown to API clients and in SMTP replies',
      })}
      <button type="submit" class="btn danger">Pause sending</button>
    </form>`;
}

function trackingCard(session: SessionRow, o: OrgRow): Safe {
  const opts: [string, string][] = [
    ['on', 'On'],
    ['off', 'Off'],
  ];
  return html`<form method="post" action="/console/settings/tracking" class="row-form">
    ${csrfField(session)}
    ${selectField({ name: 'opens', label: 'Open tracking', value: o.track_opens ? 'on' : 'off', options: opts })}
    ${selectField({ name: 'clicks', label: 'Click tracking', value: o.track_clicks ? 'on' : 'off', options: opts })}
    <button type="submit">Save tracking defaults</button>
  </form>`;
}

function ruleText(r: AlertRule): string {
  return `${r.metric} rate above ${r.threshold} % over ${r.window_days ?? 1} day(s), once ${r.min_volume ?? 0}+ messages`;
}

function rulesCard(session: SessionRow, o: OrgRow): Safe {
  const rules = o.alert_rules as AlertRule[];
  const list = rules.length
    ? tableCard(
        ['Rule', 'Action', { label: 'Actions', hidden: true }],
        rules.map(
          (r, i) =>
            html`<tr data-rule="${i}">
              <td>${ruleText(r)}</td>
              <td>${r.action === 'pause' ? badge('pause sending', 'warn') : badge('notify', 'info')}</td>
              <td>
                ${postButton(session, '/console/settings/alerts/remove', 'Remove', html`<input type="hidden" name="index" value="${i}" />`)}
              </td>
            </tr>`,
        ),
        { label: 'Alert rules' },
      )
    : emptyState('No alert rules.', 'Add one so that a bad list pauses sending before mailbox providers block you.');
  const add = html`<form method="post" action="/console/settings/alerts" class="filters">
    ${csrfField(session)}
    ${selectField({
      name: 'metric',
      label: 'Metric',
      options: [
        ['bounce', 'Bounce rate'],
        ['complaint', 'Complaint rate'],
      ],
    })}
    ${textField({ name: 'threshold', label: 'Above (%)', type: 'number', required: true, attrs: html`step="any" min="0" max="100"` })}
    ${textField({ name: 'window_days', label: 'Window (days)', type: 'number', value: '1', attrs: html`min="1" max="90"` })}
    ${textField({ name: 'min_volume', label: 'Minimum messages', type: 'number', value: '0', attrs: html`min="0"` })}
    ${selectField({
      name: 'action',
      label: 'Then',
      options: [
        ['pause', 'Pause sending'],
        ['notify', 'Notify only'],
      ],
    })}
    <div class="buttons"><button type="submit">Add rule</button></div>
  </form>`;
  return html`${list}
    <h3>Add a rule</h3>
    ${add}`;
}

async function settingsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const o = await getOrg(ctx.deps.sql, session.org_id);
  if (!o) throw notFound('Organization');
  show(ctx, session, {
    title: 'Settings',
    active: ACTIVE,
    lead: html`Settings of ${o.name}, the same as <code>PATCH /api/v1/organization</code>.`,
    body: html`${doneBanner(queryString(ctx.query, 'done'))} ${card(sendingCard(session, o), { title: 'Sending' })}
    ${card(trackingCard(session, o), { title: 'Tracking defaults' })}
    ${card(rulesCard(session, o), { title: 'Alert rules' })}
    ${card(requireForm(session, o.require_admin_totp), { title: 'Two-step sign-in' })}`,
  });
}

async function pauseAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const reason = field(form, 'reason', 'Reason for pausing', 500);
  const o = await save(ctx, session, () => ({ sending_paused: true, sending_paused_reason: reason }));
  await audit(ctx, session, 'organization.paused', { type: 'organization', id: o.id }, { reason });
  redirect(ctx, hrefWith(ACTIVE, { done: 'Sending is paused.' }));
}

async function resumeAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const o = await save(ctx, session, () => ({ sending_paused: false, sending_paused_reason: null }));
  await audit(ctx, session, 'organization.resumed', { type: 'organization', id: o.id });
  redirect(ctx, hrefWith(ACTIVE, { done: 'Sending is resumed.' }));
}

async function trackingAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const opens = choice(form, 'opens', 'Open tracking', ['on', 'off'] as const) === 'on';
  const clicks = choice(form, 'clicks', 'Click tracking', ['on', 'off'] as const) === 'on';
  const o = await save(ctx, session, () => ({ track_opens: opens, track_clicks: clicks }));
  await audit(
    ctx,
    session,
    'organization.updated',
    { type: 'organization', id: o.id },
    { change: 'tracking', opens, clicks },
  );
  redirect(ctx, hrefWith(ACTIVE, { done: 'Tracking defaults saved.' }));
}

function number(form: URLSearchParams, name: string, label: string, min: number, max: number, int: boolean): number {
  const raw = (form.get(name) ?? '').trim();
  const n = Number(raw);
  if (raw === '' || !Number.isFinite(n) || (int && !Number.isInteger(n)) || n < min || n > max)
    throw validationError(`${label} must be ${int ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  return n;
}

async function addRuleAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const threshold = number(form, 'threshold', 'Above (%)', 0, 100, false);
  if (threshold === 0) throw validationError('Above (%) must be more than 0');
  const rule: AlertRule = {
    metric: choice(form, 'metric', 'Metric', ['bounce', 'complaint'] as const),
    threshold,
    min_volume: number(form, 'min_volume', 'Minimum messages', 0, 1_000_000_000, true),
    window_days: number(form, 'window_days', 'Window (days)', 1, 90, true),
    action: choice(form, 'action', 'Then', ['pause', 'notify'] as const),
  };
  const o = await save(ctx, session, (current) => {
    if (current.alert_rules.length >= MAX_RULES) throw validationError(`At most ${MAX_RULES} alert rules`);
    return { alert_rules: [...current.alert_rules, rule] };
  });
  await audit(
    ctx,
    session,
    'organization.updated',
    { type: 'organization', id: o.id },
    { change: 'alert_rule_added', rule },
  );
  redirect(ctx, hrefWith(ACTIVE, { done: 'Alert rule added.' }));
}

async function removeRuleAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const index = Number(form.get('index'));
  let removed: unknown = null;
  const o = await save(ctx, session, (current) => {
    if (!Number.isInteger(index) || index < 0 || index >= current.alert_rules.length) throw notFound('Alert rule');
    removed = current.alert_rules[index];
    return { alert_rules: current.alert_rules.filter((_, i) => i !== index) };
  });
  await audit(
    ctx,
    session,
    'organization.updated',
    { type: 'organization', id: o.id },
    { change: 'alert_rule_removed', rule: removed },
  );
  redirect(ctx, hrefWith(ACTIVE, { done: 'Alert rule removed.' }));
}

export const SETTINGS_PAGES: PageRule[] = [
  { method: 'GET', path: '/settings', role: 'admin', page: settingsPage },
  { method: 'POST', path: '/settings/pause', role: 'admin', page: pauseAction },
  { method: 'POST', path: '/settings/resume', role: 'admin', page: resumeAction },
  { method: 'POST', path: '/settings/tracking', role: 'admin', page: trackingAction },
  { method: 'POST', path: '/settings/alerts', role: 'admin', page: addRuleAction },
  { method: 'POST', path: '/settings/alerts/remove', role: 'admin', page: removeRuleAction },
];
