// The DMARC section of a domain in the console: the last 30 days of aggregate reports, as
// GET /domains/{id}/dmarc summarises them, sources that are not this install's addresses marked
// in words (not only colour).
import type { Config } from '../../shared/config.js';
import { dmarcReporters, dmarcSources } from '../../shared/db/dmarc.js';
import type { Db } from '../../shared/db/pool.js';
import { installAddresses, normaliseIp } from '../../shared/domains/own-addresses.js';
import { dmarcReportAddress } from '../../shared/domains/records.js';
import { html, type Safe } from './html.js';
import { tableCard } from './ui.js';

const DAYS = 30;

export async function dmarcSection(
  sql: Db,
  config: Pick<Config, 'mxHost' | 'heloName' | 'dnsServers'>,
  domain: { id: string; name: string },
): Promise<Safe> {
  const [sources, reporters, own] = await Promise.all([
    dmarcSources(sql, domain.id, DAYS, 50),
    dmarcReporters(sql, domain.id, DAYS),
    installAddresses(sql, config),
  ]);
  const heading = html`<h3>DMARC reports, last ${DAYS} days</h3>`;
  if (sources.length === 0) {
    return html`${heading}
      <p class="muted">
        No aggregate reports yet. They arrive at <code>${dmarcReportAddress(domain.name)}</code> once the DMARC record
        names it.
      </p>`;
  }
  const rows = sources.map(
    (s) =>
      html`<tr>
        <td><code>${s.ip}</code></td>
        <td>${own.has(normaliseIp(s.ip)) ? 'this install' : 'not this install'}</td>
        <td>${s.messages}</td>
        <td>${s.spf_aligned} pass, ${s.messages - s.spf_aligned} fail</td>
        <td>${s.dkim_aligned} pass, ${s.messages - s.dkim_aligned} fail</td>
        <td>${s.none} none, ${s.quarantine} quarantine, ${s.reject} reject</td>
        <td>${s.reporters.join(', ')}</td>
      </tr>`,
  );
  const columns = ['Source IP', 'Sender', 'Messages', 'SPF aligned', 'DKIM aligned', 'Disposition', 'Reported by'];
  const reported = reporters.map((r) => `${r.name} (${r.reports} reports, ${r.messages} messages)`).join('; ');
  return html`${heading}
    <p>Reporters: ${reported}</p>
    ${tableCard(columns, rows, { label: `DMARC sources of ${domain.name}` })}`;
}
