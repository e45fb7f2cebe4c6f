// The Metrics page: the very report GET /metrics answers (shared/metrics/report.ts) for the
// organization or one domain, live or test mail: the rates against the thresholds that pause
// sending, charts of the days (outcomes stacked, rates against the thresholds) and of the
// breakdowns by domain, mailbox provider and stream, each with its numbers a click away, and
// every counter per day.
import { listOrgDomains, type DomainRow } from '../../shared/db/domains.js';
import { readDomainTotals } from '../../shared/db/metrics.js';
import { getOrg, type AlertRule } from '../../shared/db/orgs.js';
import type { Db } from '../../shared/db/pool.js';
import { FACET_FIELDS, SERIES_FIELDS } from '../../shared/metrics/counters.js';
import {
  metricsReport,
  pickCounts,
  type FacetEntry,
  type MetricsReport,
  type SeriesRow,
} from '../../shared/metrics/report.js';
import type { ApiContext } from '../types.js';
import { breakdownChart, rateChart, stackedDayChart, type Layer } from './chart.js';
import { html, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { card, dataTable, hrefWith, modeSwitch, stats } from './ui.js';

const DAY_CHOICES = [7, 30, 90];

/** Column headings for the report's fields (the API's names stay in data attributes). */
const HEADINGS: Record<string, string> = {
  sent: 'Sent',
  delivered: 'Delivered',
  bouncedHard: 'Hard bounces',
  bouncedSoft: 'Soft bounces',
  complained: 'Complaints',
  opened: 'Opened (people)',
  clicked: 'Clicked (people)',
  unsubscribed: 'Unsubscribed',
  openedMachine: 'Opened (machines)',
  clickedMachine: 'Clicked (machines)',
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
  open: 'opened by people (of delivered)',
  click: 'clicked by people (of delivered)',
  openMachine: 'opened by machines (of delivered)',
  clickMachine: 'clicked by machines (of delivered)',
};

const heading = (api: string) => ({ label: HEADINGS[api] ?? api, num: true });

export type Mode = 'live' | 'test';

export function modeOf(q: unknown): Mode {
  return q === 'test' ? 'test' : 'live';
}

function daysOf(q: unknown): number {
  const n = typeof q === 'string' && /^\d{1,2}$/.test(q) ? Number(q) : 30;
  return n >= 1 && n <= 90 ? n : 30;
}

function selector(domains: DomainRow[], domain: DomainRow | null, days: number, mode: Mode): Safe {
  const opts = domains.map(
    (d) => html`<option value="${d.id}" ${d.id === domain?.id ? html` selected` : ''}>${d.name}</option>`,
  );
  const dayOpts = DAY_CHOICES.map(
    (n) => html`<option value="${n}" ${n === days ? html` selected` : ''}>${n} days</option>`,
  );
  return html`<div class="metrics-bar">
    ${modeSwitch(mode, (m) =>
      hrefWith('/console/metrics', { domain: domain?.id ?? null, days: String(days), mode: m === 'test' ? m : null }),
    )}
    <form method="get" action="/console/metrics" class="filters metrics-filters" aria-label="Domain and window">
      ${mode === 'test' ? html`<input type="hidden" name="mode" value="test" />` : ''}
      <div class="field">
        <label for="f-domain">Domain</label>
        <select id="f-domain" name="domain">
          <option value="">All domains</option>
          ${opts}
        </select>
      </div>
      <div class="field">
        <label for="f-days">Window</label>
        <select id="f-days" name="days">
          ${dayOpts}
        </select>
      </div>
      <div class="buttons"><button type="submit" class="primary">Show</button></div>
    </form>
  </div>`;
}

/** The pause rules of the organization for one metric, the lowest threshold first. */
function pauseRules(rules: AlertRule[], metric: AlertRule['metric']): AlertRule[] {
  return rules.filter((r) => r.metric === metric && r.action === 'pause').sort((a, b) => a.threshold - b.threshold);
}

function pct(n: number, d: number): number {
  return d === 0 ? 0 : Math.round((n / d) * 10000) / 100;
}

/** Of the window's sent mail, as the alert rules measure it. */
const bounceOfSent = (t: Record<string, number | string>) =>
  pct(Number(t.bouncedHard) + Number(t.bouncedSoft), Number(t.sent));
const complaintOfSent = (t: Record<string, number | string>) => pct(Number(t.complained), Number(t.sent));

function ruleText(r: AlertRule | undefined): string {
  return r ? `pauses at ${r.threshold}% over ${r.window_days} day${r.window_days === 1 ? '' : 's'}` : 'no pause rule';
}

function totalsCard(r: MetricsReport, rules: AlertRule[]): Safe {
  const bounce = pauseRules(rules, 'bounce')[0];
  const complaint = pauseRules(rules, 'complaint')[0];
  const over = (v: number, rule: AlertRule | undefined) => (rule && v >= rule.threshold ? 'over' : '');
  const rate = (v: number, rule: AlertRule | undefined, key: string) =>
    html`<span class="rate ${over(v, rule)}" data-rate-of-sent="${key}">${v.toFixed(2)}%</span>
      <small class="muted">${ruleText(rule)}</small>`;
  const b = bounceOfSent(r.totals);
  const c = complaintOfSent(r.totals);
  const head = stats([
    [
      'Sent',
      html`<span data-total="sent" data-n="${r.totals.sent}">${(r.totals.sent ?? 0).toLocaleString('en')}</span>`,
    ],
    [
      'Delivered',
      html`<span data-total="delivered" data-n="${r.totals.delivered}"
        >${(r.totals.delivered ?? 0).toLocaleString('en')}</span
      >`,
    ],
    ['Bounce rate (of sent)', rate(b, bounce, 'bounce')],
    ['Complaint rate (of sent)', rate(c, complaint, 'complaint')],
  ]);
  const cells = SERIES_FIELDS.filter(([api]) => api !== 'sent' && api !== 'delivered').map(
    ([api]) =>
      html`<div>
        <dt>${HEADINGS[api]}</dt>
        <dd data-total="${api}">${r.totals[api]}</dd>
      </div>`,
  );
  const rates = Object.entries(r.rates).map(
    ([k, v]) =>
      html`<div>
        <dt>${RATE_NAMES[k] ?? k}</dt>
        <dd data-rate="${k}">${v.toFixed(2)}%</dd>
      </div>`,
  );
  return card(
    html`${head}
      <dl class="details compact">${cells}</dl>
      <h3>Rates</h3>
      <dl class="details compact rates">${rates}</dl>`,
    { title: 'Totals' },
  );
}

type Row = FacetEntry;
const BREAKDOWN: Layer<Row>[] = [
  { cls: 'delivered', label: 'delivered', value: (r) => Number(r.delivered) },
  { cls: 'bounced', label: 'bounced', value: (r) => Number(r.bouncedHard) + Number(r.bouncedSoft) },
  { cls: 'complained', label: 'complaints', value: (r) => Number(r.complained) },
];

function breakdown(id: string, title: string, first: string, rows: Row[]): Safe {
  if (rows.length === 0) return html`<p class="muted" data-breakdown="${id}">No mail in this window.</p>`;
  return breakdownChart(rows, {
    id,
    title,
    first,
    layers: BREAKDOWN,
    attr: (r) => html`data-${id}="${r.key}"`,
  });
}

async function byDomain(db: Db, orgId: string, domains: DomainRow[], r: MetricsReport): Promise<Row[]> {
  const from = r.series[0]?.day ?? '';
  const to = r.series.at(-1)?.day ?? '';
  const names = new Map(domains.map((d) => [d.id, d.name]));
  return (await readDomainTotals(db, orgId, from, to)).map((t) => ({
    key: t.domain_id,
    label: names.get(t.domain_id) ?? t.domain_id,
    ...pickCounts(t, FACET_FIELDS),
  }));
}

function dailyTable(r: MetricsReport): Safe {
  const rows = [...r.series].reverse().map(
    (d) =>
      html`<tr>
        <td class="nowrap">${d.day}</td>
        ${SERIES_FIELDS.map(([api]) => html`<td class="num">${d[api]}</td>`)}
      </tr>`,
  );
  return dataTable(['Day (UTC)', ...SERIES_FIELDS.map(([api]) => heading(api))], rows, {
    label: 'Every counter per day',
    attrs: html`data-series`,
    scroll: true,
  });
}

const RATE_LINES: Layer<SeriesRow>[] = [
  { cls: 'bounced', label: 'bounce rate', value: bounceOfSent },
  { cls: 'complained', label: 'complaint rate', value: complaintOfSent },
];

export async function metricsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const [domains, org] = await Promise.all([listOrgDomains(sql, session.org_id), getOrg(sql, session.org_id)]);
  const ref = typeof ctx.query.domain === 'string' ? ctx.query.domain : '';
  const domain = domains.find((d) => d.id === ref || d.name === ref.toLowerCase()) ?? null;
  const days = daysOf(ctx.query.days);
  const mode = modeOf(ctx.query.mode);
  const live = mode === 'live';
  const [report, streams] = await Promise.all([
    metricsReport(sql, { orgId: session.org_id, domain, days, facet: 'provider', mode }),
    live ? metricsReport(sql, { orgId: session.org_id, domain, days, facet: 'stream' }) : null,
  ]);
  const rules = (org?.alert_rules ?? []) as AlertRule[];
  const marks = [...pauseRules(rules, 'bounce'), ...pauseRules(rules, 'complaint')].map((r) => ({
    value: r.threshold,
    label: `${r.metric} ${r.threshold}% pauses`,
  }));
  const domainsRows = live && !domain ? await byDomain(sql, session.org_id, domains, report) : [];
  const where = `${domain ? domain.name : 'All domains'}, last ${days} days, ${live ? 'live' : 'test'} mail`;
  show(ctx, session, {
    title: 'Metrics',
    active: '/console/metrics',
    body: html`${selector(domains, domain, days, mode)}
      <h2 class="metrics-where">${where}</h2>
      ${
        live
          ? ''
          : html`<p class="banner info" role="status">
              Test-key mail: counted from its events, never sent, never in the live figures or the alert rules.
            </p>`
      }
      ${totalsCard(report, rules)}
      ${card(stackedDayChart(report.series, { id: 'days', title: 'Sent per day, by outcome' }), {
        title: 'Per day',
      })}
      ${card(
        rateChart(report.series, {
          id: 'rates',
          title: 'Bounce and complaint rates per day (of sent)',
          lines: RATE_LINES,
          marks,
        }),
        { title: 'Rates against the pause thresholds' },
      )}
      ${
        live
          ? html`
              ${domain ? '' : card(breakdown('domain', 'By domain', 'Domain', domainsRows), { title: 'By domain' })}
              ${card(breakdown('provider', 'By mailbox provider', 'Provider', report.by ?? []), {
                title: 'By mailbox provider',
              })}
              ${card(breakdown('stream', 'By stream', 'Stream', streams?.by ?? []), { title: 'By stream' })}
            `
          : ''
      }
      ${card(
        html`<details>
          <summary>Every counter per day</summary>
          ${dailyTable(report)}
        </details>`,
        { title: 'All counters' },
      )}
      <p class="muted">
        Opens and clicks count people; those made by Apple's Mail Privacy Protection, link scanners and other machines
        are counted apart (docs/tracking.md). The same numbers:
        <code
          >GET
          /api/v1/metrics?days=${days}${domain ? `&domain=${domain.name}` : ''}${live ? '' : ' (live mail only)'}</code
        >
      </p>`,
  });
}
