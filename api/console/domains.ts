// Sending domains (admins): the list with an Add form; per domain the DNS records to publish (each
// value with a copy button) and each one's last check, a Verify button that runs the same DNS check
// as POST /domains/{id}/verify, the tracking settings (open and click tracking: the organization's
// default, on or off), Delete after a confirmation, and the summary of the domain's DMARC aggregate
// reports (console/dmarc.ts). Adding and deleting use the API's own functions
// (shared/domains/setup.ts, remove.ts).
import { getOrgDomain, listOrgDomains, updateDomainTracking, type DomainRow } from '../../shared/db/domains.js';
import type { SessionRow } from '../../shared/db/users.js';
import { checkDomain } from '../../shared/domains/check.js';
import { withPoolSpfOne } from '../../shared/domains/pool-spf.js';
import type { DomainRecord } from '../../shared/domains/records.js';
import { removeDomain } from '../../shared/domains/remove.js';
import { DomainSetupError, provisionDomain } from '../../shared/domains/setup.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { choice, field } from './form.js';
import { csrfField, html, postButton, when, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { dmarcSection } from './dmarc.js';
import {
  card,
  doneBanner,
  domainName,
  emptyState,
  hrefWith,
  queryString,
  selectField,
  stateBadge,
  tableCard,
  textField,
} from './ui.js';

const ACTIVE = '/console/domains';

/** What each record is for, in words (the API's `record` codes stay in `data-record`). */
const RECORD_NAMES: Record<DomainRecord['record'], string> = {
  DKIM: 'DKIM signature key',
  SPF: 'SPF (bounce domain)',
  MX_BOUNCE: 'Bounces (MX)',
  MX_REPLY: 'Replies (MX)',
  MX_INBOUND: 'Inbound mail (MX)',
  DMARC: 'DMARC policy',
};

function recordsTable(records: DomainRecord[]): Safe {
  const rows = records.map((r, i) => {
    const id = `rec-${i}`;
    return html`<tr data-record="${r.record}">
      <td>${RECORD_NAMES[r.record] ?? r.record}</td>
      <td>${r.type}</td>
      <td class="rec-name">
        <code id="${id}-name">${domainName(r.name)}</code>
        <button type="button" class="btn small" data-copy="#${id}-name" hidden>Copy name</button>
      </td>
      <td class="rec-value">
        <code id="${id}-value">${r.value}</code>
        <button type="button" class="btn small" data-copy="#${id}-value" hidden>Copy value</button>
      </td>
      <td>${r.priority ?? ''}</td>
      <td>${stateBadge(r.status)}${r.reason ? html`<br /><span class="muted">${r.reason}</span>` : ''}</td>
    </tr>`;
  });
  return tableCard(['Record', 'Type', 'Name', 'Value', 'Priority', 'Status'], rows, { label: 'DNS records' });
}

function tracking(v: boolean | null): string {
  return v === null ? 'organization default' : v ? 'on' : 'off';
}

async function domainsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  const rows = domains.map(
    (d) =>
      html`<tr data-domain="${d.name}">
        <td>
          <a class="row-link" href="/console/domains/${d.id}">${domainName(d.name)}</a
          >${d.demo ? html` <span class="badge neutral">demo</span>` : ''}
        </td>
        <td>${stateBadge(d.status)}</td>
        <td class="nowrap">${when(d.last_checked_at)}</td>
        <td class="nowrap">${when(d.verified_at, 'not yet')}</td>
        <td class="nowrap">${when(d.created_at)}</td>
      </tr>`,
  );
  const list = domains.length
    ? tableCard(['Domain', 'Status', 'Last checked', 'Verified', 'Added'], rows, { label: 'Domains' })
    : card(emptyState('No domains yet.', 'Add the domain you send from below, then publish its DNS records.'));
  const add = html`<form method="post" action="/console/domains" class="row-form">
    ${csrfField(session)}
    ${textField({ name: 'name', label: 'Domain name', required: true, maxlength: 253, placeholder: 'mail.example.com' })}
    <button type="submit" class="primary">Add domain</button>
  </form>`;
  show(ctx, session, {
    title: 'Domains',
    active: ACTIVE,
    lead: html`Mail is sent from verified domains only: publish each domain's DNS records, then verify.`,
    body: html`${doneBanner(queryString(ctx.query, 'deleted') ? `${queryString(ctx.query, 'deleted')} is deleted.` : '')}
    ${list}${card(add, { title: 'Add a domain' })}`,
  });
}

async function addAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const name = field(form, 'name', 'Domain name', 253);
  const { sql, config } = ctx.deps;
  const d = await provisionDomain(sql, config, { orgId: session.org_id, name }).catch((err: unknown) => {
    if (!(err instanceof DomainSetupError)) throw err;
    throw err.kind === 'invalid_name'
      ? validationError(`Domain name: ${err.message}`)
      : new ApiError('conflict', err.message);
  });
  await ctx.deps.auth.invalidateOrg(session.org_id);
  await audit(ctx, session, 'domain.created', { type: 'domain', id: d.id }, { name: d.name });
  redirect(
    ctx,
    hrefWith(`/console/domains/${d.id}`, { done: `${d.name} is added: publish these records, then verify.` }),
  );
}

async function loadDomain(ctx: ApiContext, session: SessionRow): Promise<DomainRow> {
  const id = ctx.params.id ?? '';
  const d = isId(id, 'dom') ? await getOrgDomain(ctx.deps.sql, session.org_id, id) : null;
  if (!d) throw notFound('Domain');
  return d;
}

function trackingForm(session: SessionRow, d: DomainRow): Safe {
  const options: [string, string][] = [
    ['default', 'Organization default'],
    ['on', 'On'],
    ['off', 'Off'],
  ];
  const value = (v: boolean | null) => (v === null ? 'default' : v ? 'on' : 'off');
  return html`<form method="post" action="/console/domains/${d.id}/tracking" class="row-form">
    ${csrfField(session)}
    ${selectField({ name: 'opens', label: 'Open tracking', value: value(d.track_opens), options })}
    ${selectField({ name: 'clicks', label: 'Click tracking', value: value(d.track_clicks), options })}
    <button type="submit">Save tracking</button>
  </form>`;
}

/**
 * After Verify (?checked=1): the outcome of the check as the domain's status now says it, green
 * only when it is verified.
 */
function checkedBanner(ctx: ApiContext, d: DomainRow): Safe | string {
  if (queryString(ctx.query, 'checked') !== '1') return '';
  return d.status === 'verified'
    ? doneBanner(`DNS checked: ${d.name} is verified.`)
    : doneBanner(
        `DNS checked: ${d.name} is ${d.status.replace(/_/g, ' ')}. The records marked below are not found as published yet; publish them, wait for DNS, then verify again.`,
        'warn',
      );
}

async function domainPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  // The SPF record names the addresses of the domain's IP pool, as GET /domains/{id} shows it.
  const d = await withPoolSpfOne(ctx.deps.sql, await loadDomain(ctx, session));
  const dmarc = await dmarcSection(ctx.deps.sql, ctx.deps.config, d);
  show(ctx, session, {
    title: d.name,
    active: ACTIVE,
    lead: d.demo
      ? html`${stateBadge(d.status)} The demo domain of <code>npm start</code>: test keys send from it, and its mail
          never leaves this machine, so it is not checked against DNS.`
      : html`${stateBadge(d.status)} Last checked ${when(d.last_checked_at)}; verified since
        ${when(d.verified_at, 'not yet')}.`,
    actions: html`${
        d.demo ? '' : postButton(session, `/console/domains/${d.id}/verify`, 'Verify DNS now', undefined, 'primary')
      } <a class="btn danger" href="/console/domains/${d.id}/delete">Delete</a>`,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${checkedBanner(ctx, d)}
    ${
      d.demo
        ? html`<p class="muted">Nothing to publish. To send live mail, add a domain you own.</p>`
        : html`<h2>DNS records to publish</h2>
            ${recordsTable(d.records as DomainRecord[])}`
    }
    ${card(
      html`<p class="muted">Open tracking: ${tracking(d.track_opens)}; click tracking: ${tracking(d.track_clicks)}.</p>
        ${trackingForm(session, d)}`,
      { title: 'Tracking' },
    )}
    ${card(dmarc, { title: 'DMARC' })}`,
  });
}

export async function verifyDomainAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql, config } = ctx.deps;
  const d = await loadDomain(ctx, session);
  const saved = await checkDomain(sql, config, d, ctx.deps.queues);
  if (!saved) throw notFound('Domain');
  if (saved.status !== d.status) await ctx.deps.auth.invalidateOrg(session.org_id);
  ctx.state.log.info(
    { event: 'DOMAIN_VERIFY', domainId: d.id, domain: d.name, status: saved.status, userId: session.user_id },
    'domain DNS check finished',
  );
  await audit(ctx, session, 'domain.verify_requested', { type: 'domain', id: d.id }, { status: saved.status });
  redirect(ctx, hrefWith(`/console/domains/${d.id}`, { checked: '1' }));
}

async function trackingAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const d = await loadDomain(ctx, session);
  const read = (name: string, label: string) => {
    const v = choice(form, name, label, ['default', 'on', 'off'] as const);
    return v === 'default' ? null : v === 'on';
  };
  const patch = { track_opens: read('opens', 'Open tracking'), track_clicks: read('clicks', 'Click tracking') };
  if (!(await updateDomainTracking(ctx.deps.sql, d.id, patch))) throw notFound('Domain');
  await audit(ctx, session, 'domain.updated', { type: 'domain', id: d.id }, patch);
  redirect(ctx, hrefWith(`/console/domains/${d.id}`, { done: 'Tracking settings saved.' }));
}

async function deleteConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const d = await loadDomain(ctx, session);
  confirmPage(ctx, session, {
    title: 'Delete this domain?',
    active: ACTIVE,
    question: html`<strong>${d.name}</strong> can no longer send, its DKIM key is destroyed, and its messages and their
      history are deleted with it. Keys restricted to it lose it.`,
    action: `/console/domains/${d.id}/delete`,
    confirmLabel: 'Delete domain',
    back: `/console/domains/${d.id}`,
    danger: true,
  });
}

async function deleteAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const d = await loadDomain(ctx, session);
  await removeDomain(ctx.deps.sql, session.org_id, d);
  await ctx.deps.auth.invalidateOrg(session.org_id);
  await audit(ctx, session, 'domain.deleted', { type: 'domain', id: d.id }, { name: d.name });
  redirect(ctx, hrefWith('/console/domains', { deleted: d.name }));
}

export const DOMAIN_PAGES: PageRule[] = [
  { method: 'GET', path: '/domains', role: 'admin', page: domainsPage },
  { method: 'POST', path: '/domains', role: 'admin', page: addAction },
  { method: 'GET', path: '/domains/:id', role: 'admin', page: domainPage },
  { method: 'POST', path: '/domains/:id/verify', role: 'admin', page: verifyDomainAction },
  { method: 'POST', path: '/domains/:id/tracking', role: 'admin', page: trackingAction },
  { method: 'GET', path: '/domains/:id/delete', role: 'admin', page: deleteConfirm },
  { method: 'POST', path: '/domains/:id/delete', role: 'admin', page: deleteAction },
];
