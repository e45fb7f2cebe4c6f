// The overview: which organization this is, whether it may send, and how many domains are ready.
import { listOrgDomains } from '../../shared/db/domains.js';
import type { ApiContext } from '../types.js';
import { html } from './html.js';
import { show, type ConsoleRequest } from './respond.js';

export async function overviewPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  const verified = domains.filter((d) => d.status === 'verified').length;
  const paused = session.sending_paused
    ? html`<div class="banner warn" data-paused="true">
        <strong>Sending is paused.</strong>
        ${session.sending_paused_reason ? html` Reason: <span data-paused-reason>${session.sending_paused_reason}</span>` : ' No reason was given.'}
        Messages are accepted and held until sending resumes.
      </div>`
    : html`<div class="banner ok" data-paused="false">Sending is active.</div>`;
  show(ctx, session, {
    title: session.org_name,
    active: '/console',
    body: html`${paused}
      <table>
        <tbody>
          <tr>
            <th>Organization id</th>
            <td><code>${session.org_id}</code></td>
          </tr>
          <tr>
            <th>Verified domains</th>
            <td class="num" data-verified-domains>${verified}</td>
          </tr>
          <tr>
            <th>All domains</th>
            <td class="num">${domains.length}</td>
          </tr>
          <tr>
            <th>Signed in as</th>
            <td>${session.email} (${session.role})</td>
          </tr>
        </tbody>
      </table>
      <p>
        <a href="/console/keys">API keys</a> · <a href="/console/metrics">Metrics</a>${
          session.role === 'admin' ? html` · <a href="/console/domains">Domains</a>` : ''
        }
      </p>`,
  });
}
