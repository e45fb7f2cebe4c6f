// The Reputation page and banner (DESIGN §20): what the reputation watch last heard from the
// blocklists about the organization's verified domains and the addresses its mail may leave from
// (shared/db/reputation.ts orgChecks). The overview shows the banner while something is listed.
import { orgChecks, type RblCheckRow } from '../../shared/db/reputation.js';
import type { ApiContext } from '../types.js';
import { html, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { stateBadge, tableCard } from './ui.js';

/** The targets a zone lists, one entry each. */
function listedTargets(rows: RblCheckRow[]): string[] {
  return [...new Set(rows.filter((r) => r.listed).map((r) => r.target))];
}

/** A warning while a blocklist lists one of the organization's addresses or domains; empty otherwise. */
export function reputationBanner(rows: RblCheckRow[]): Safe | '' {
  const listed = listedTargets(rows);
  if (listed.length === 0) return '';
  return html`<div class="banner warn" data-rbl-listed="${listed.length}" role="alert">
    <strong>On a blocklist:</strong> ${listed.join(', ')}. Receivers may refuse or folder this mail.
    <a href="/console/reputation">Reputation</a> says which lists and since when.
  </div>`;
}

export async function loadReputation(ctx: ApiContext, orgId: string): Promise<RblCheckRow[]> {
  return await orgChecks(ctx.deps.sql, orgId);
}

export async function reputationPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const rows = await loadReputation(ctx, session.org_id);
  const table = rows.length
    ? tableCard(
        ['What', 'Address or domain', 'Blocklist', 'State', 'Last answer', 'Listed since', 'Checked'],
        rows.map(
          (r) =>
            html`<tr data-rbl-target="${r.target}" data-rbl-zone="${r.zone}">
              <td>${r.kind === 'ip' ? 'Sending address' : 'Domain'}</td>
              <td>${r.target}</td>
              <td>${r.zone}</td>
              <td>${stateBadge(r.listed ? 'listed' : r.status === 'unknown' ? 'unknown' : 'clear')}</td>
              <td>${r.status}${r.answer ? ` (${r.answer})` : ''}</td>
              <td class="nowrap">${r.listed_since ? r.listed_since.toISOString() : ''}</td>
              <td class="nowrap">${r.checked_at.toISOString()}</td>
            </tr>`,
        ),
        { label: 'Blocklist answers' },
      )
    : html`<p class="muted">No check yet: the operator sets RBL_ZONES and DBL_ZONES to the blocklists to watch.</p>`;
  show(ctx, session, {
    title: 'Reputation',
    active: '/console/reputation',
    body: html`${reputationBanner(rows)}${table}
      <p class="muted">
        Each sending address is looked up in the operator's IP blocklists and each verified domain in the domain
        blocklists, every few minutes. A listed pool address sends nothing while its pool has another; "unknown" means
        the list did not answer, and keeps the last verdict.
      </p>`,
  });
}
