// The Metrics page: the very report GET /metrics answers (shared/metrics/report.ts) for the
// organization or one domain, as a chart, a daily table and a mailbox-provider breakdown.
import { listOrgDomains, type DomainRow } from '../../shared/db/domains.js';
import { FACET_FIELDS, SERIES_FIELDS } from '../../shared/metrics/counters.js';
import { metricsReport, type FacetEntry, type MetricsReport } from '../../shared/metrics/report.js';
import type { ApiContext } from '../types.js';
import { barChart } from './chart.js';
import { html, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { tableCard } from './ui.js';

const DAY_CHOICES = [7, 30, 90];

/** Column headings for the report's fields (the API's names stay in data attributes). */
const HEADINGS: Record<string, string> = {
  sent: 'Sent',
  delivered: 'Delivered',
  bouncedHard: 'Hard bounces',
  bouncedSoft: 'Soft bounces',
  complained: 'Complaints',
  opened: 'Opened',
  clicked: 'Clicked',
  unsubscribed: 'Unsubscribed',
  delayed: 'Delayed',
  blocked: 'Blocked',
};

/** The rates' names in words. */
const RATE_NAMES: Record<string, string> = {
  delivery: 'delivered',
  bounce: 'bounced',
  hardBounce: 'hard bounces',
  softBounce: 'soft bounces',
  complaint: 'complaints (of delivered)',
  open: 'opened (of delivered)',
  click: 'clicked (of delivered)',
};

const heading = (api: string) => ({ label: HEADINGS[api] ?? api, num: true });

function daysOf(q: unknown): number {
  const n = typeof q === 'string' && /^\d{1,2}$/.test(q) ? Number(q) : 30;
  return n >= 1 && n <= 90 ? n : 30;
}

function selector(domains: DomainRow[], domain: DomainRow | null, days: number): Safe {
  const opts = domains.map(
    (d) => html`<option value="${d.id}" ${d.id === domain?.id ? html` selected` : ''}>${d.name}</option>`,
  );
  const dayOpts = DAY_CHOICES.map(
    (n) => html`<option value="${n}" ${n === days ? html` selected` : ''}>${n} days</option>`,
  );
  return html`<form method="get" action="/console/metrics" class="inline">
    <label
      >Domain
      <select name="domain">
        <option value="">All domains</option>
        ${opts}
      </select></label
    >
    <label
      >Window
      <select name="days">
        ${dayOpts}
      </select></label
    >
    <button type="submit">Show</button>
  </form>`;
}

function totalsTable(r: MetricsReport): Safe {
  const cells = SERIES_FIELDS.map(([api]) => html`<td class="num" data-total="${api}">${r.totals[api]}</td>`);
  const rates = Object.entries(r.rates).map(
    ([k, v], i) => html`${i > 0 ? ' · ' : ''}<span data-rate="${k}">${RATE_NAMES[k] ?? k} ${v.toFixed(2)}%</span>`,
  );
  return html`${tableCard(
      SERIES_FIELDS.map(([api]) => heading(api)),
      [
        html`<tr>
          ${cells}
        </tr>`,
      ],
      { label: 'Totals' },
    )}
    <p>Rates: ${rates}</p>`;
}

function dailyTable(r: MetricsReport): Safe {
  const rows = [...r.series].reverse().map(
    (d) =>
      html`<tr>
        <td class="nowrap">${d.day}</td>
        ${SERIES_FIELDS.map(([api]) => html`<td class="num">${d[api]}</td>`)}
      </tr>`,
  );
  return html`${tableCard(['Day (UTC)', ...SERIES_FIELDS.map(([api]) => heading(api))], rows, { label: 'Per day', attrs: html`data-series`, scroll: true })}`;
}

function providerTable(by: FacetEntry[]): Safe {
  if (by.length === 0) return html`<p class="muted">No mail in this window.</p>`;
  const rows = by.map(
    (p) =>
      html`<tr data-provider="${p.key}">
        <td>${p.label}</td>
        ${FACET_FIELDS.map(([api]) => html`<td class="num">${p[api]}</td>`)}
      </tr>`,
  );
  return html`${tableCard(['Provider', ...FACET_FIELDS.map(([api]) => heading(api))], rows, { label: 'By mailbox provider' })}`;
}

export async function metricsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const domains = await listOrgDomains(sql, session.org_id);
  const ref = typeof ctx.query.domain === 'string' ? ctx.query.domain : '';
  const domain = domains.find((d) => d.id === ref || d.name === ref.toLowerCase()) ?? null;
  const days = daysOf(ctx.query.days);
  const report = await metricsReport(sql, { orgId: session.org_id, domain, days, facet: 'provider' });
  show(ctx, session, {
    title: 'Metrics',
    active: '/console/metrics',
    body: html`${selector(domains, domain, days)}
      <h2>${domain ? domain.name : 'All domains'}, last ${days} days</h2>
      ${totalsTable(report)}${barChart(report.series)}
      <h2>By mailbox provider</h2>
      ${providerTable(report.by ?? [])}
      <h2>Per day</h2>
      ${dailyTable(report)}
      <p class="muted">
        Test-key mail is not counted. The same numbers:
        <code>GET /api/v1/metrics?days=${days}${domain ? `&domain=${domain.name}` : ''}</code>
      </p>`,
  });
}
