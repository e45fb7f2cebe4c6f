// Sending domains (admins): status, the DNS records to publish with each one's last check, and a
// Verify button that runs the same DNS check as POST /domains/{id}/verify.
import { getOrgDomain, listOrgDomains, type DomainRow } from '../../shared/db/domains.js';
import { checkDomain } from '../../shared/domains/check.js';
import type { DomainRecord } from '../../shared/domains/records.js';
import { notFound } from '../../shared/errors.js';
import type { ApiContext } from '../types.js';
import { html, postButton, when, type Safe } from './html.js';
import { redirect, show, type ConsoleRequest } from './respond.js';

function recordsTable(records: DomainRecord[]): Safe {
  const rows = records.map(
    (r) =>
      html`<tr>
        <td>${r.record}</td>
        <td>${r.type}</td>
        <td><code>${r.name}</code></td>
        <td><code>${r.value}</code></td>
        <td>${r.priority ?? ''}</td>
        <td>${r.status}${r.reason ? html`<br /><span class="muted">${r.reason}</span>` : ''}</td>
      </tr>`,
  );
  return html`<table>
    <thead>
      <tr>
        <th>Record</th>
        <th>Type</th>
        <th>Name</th>
        <th>Value</th>
        <th>Priority</th>
        <th>Status</th>
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

function domainSection(req: ConsoleRequest, d: DomainRow): Safe {
  return html`<section data-domain="${d.name}">
    <h2>${d.name} <small>${d.status}</small></h2>
    <p>
      Last checked ${when(d.last_checked_at)}; verified since ${when(d.verified_at)}.
      ${postButton(req.session, `/console/domains/${d.id}/verify`, 'Verify DNS now')}
    </p>
    ${recordsTable(d.records as DomainRecord[])}
  </section>`;
}

export async function domainsPage(ctx: ApiContext, req: ConsoleRequest): Promise<void> {
  const domains = await listOrgDomains(ctx.deps.sql, req.session.org_id);
  show(ctx, req.session, {
    title: 'Domains',
    active: '/console/domains',
    body: domains.length
      ? html`${domains.map((d) => domainSection(req, d))}`
      : html`<p>No domains yet. Add one with <code>POST /api/v1/domains</code> or <code>tern domain add</code>.</p>`,
  });
}

export async function verifyDomainAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql, config } = ctx.deps;
  const d = await getOrgDomain(sql, session.org_id, ctx.params.id ?? '');
  if (!d) throw notFound('Domain');
  const saved = await checkDomain(sql, config, d);
  if (!saved) throw notFound('Domain');
  if (saved.status !== d.status) await ctx.deps.auth.invalidateOrg(session.org_id);
  ctx.state.log.info(
    { event: 'DOMAIN_VERIFY', domainId: d.id, domain: d.name, status: saved.status, userId: session.user_id },
    'domain DNS check finished',
  );
  redirect(ctx, '/console/domains');
}
