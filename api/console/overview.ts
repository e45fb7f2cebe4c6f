// The overview: whether the organization may send (and why not), the getting-started steps a new
// organization has left, today's counts and the last 30 days as a chart (the metrics report of
// GET /metrics, UTC days; live or test mail), and the domains that need attention.
import { listOrgDomains } from '../../shared/db/domains.js';
import { countEmailsSince } from '../../shared/db/email-search.js';
import { firstSteps, type FirstSteps } from '../../shared/db/orgs.js';
import type { SessionRow } from '../../shared/db/users.js';
import { metricsReport } from '../../shared/metrics/report.js';
import type { ApiContext } from '../types.js';
import { stackedDayChart } from './chart.js';
import { html, type Safe } from './html.js';
import { modeOf } from './metrics.js';
import { loadReputation, reputationBanner } from './reputation.js';
import { show, type ConsoleRequest } from './respond.js';
import { card, details, domainName, hrefWith, modeSwitch, stateBadge } from './ui.js';

/** The steps of a new organization, each with where to do it. */
function checklist(session: SessionRow, steps: FirstSteps): Safe | string {
  const admin = session.role === 'admin';
  const items: [boolean, string, Safe | string][] = [
    [
      steps.domainVerified,
      'Verify a domain of your own',
      admin
        ? html`<a href="/console/domains">Add it and publish its DNS records</a> (the demo domain sends test mail only)`
        : 'an admin adds it under Domains',
    ],
    [steps.keyMinted, 'Mint an API key', html`<a href="/console/keys">API keys</a> (a SEND key is enough to send)`],
    [
      steps.emailSent,
      'Send a first email',
      html`<code>POST /api/v1/emails</code> or the SMTP relay; a test key keeps it on this machine`,
    ],
    [
      steps.webhookAdded,
      'Add a webhook',
      admin
        ? html`<a href="/console/webhooks">Webhooks</a>: hear about deliveries, bounces and complaints`
        : 'an admin adds it under Webhooks',
    ],
  ];
  const left = items.filter(([done]) => !done).length;
  if (left === 0) return '';
  return card(
    html`<ol class="checklist" data-checklist>
      ${items.map(
        ([done, what, how]) =>
          html`<li data-step-done="${String(done)}" class="${done ? 'done' : ''}">
            <span class="check-mark" aria-hidden="true">${done ? '✓' : ''}</span>
            <span><strong>${what}</strong>${done ? html` <span class="sr-only">(done)</span>` : html` — ${how}`}</span>
          </li>`,
      )}
    </ol>`,
    { title: `Getting started: ${items.length - left} of ${items.length} done` },
  );
}

const TODAY: [key: 'sent' | 'delivered' | 'bouncedHard' | 'bouncedSoft' | 'complained' | 'opened', label: string][] = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['bouncedHard', 'Hard bounces'],
  ['bouncedSoft', 'Soft bounces'],
  ['complained', 'Complaints'],
  ['opened', 'Opened'],
];

/** Test-mode emails today are counted up to this many (shown as "10,000 or more"). */
const TEST_COUNT_CAP = 10_000;

export async function overviewPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const mode = modeOf(ctx.query.mode);
  const live = mode === 'live';
  const midnight = new Date(new Date().toISOString().slice(0, 10));
  const [domains, trend, testToday, steps, reputation] = await Promise.all([
    listOrgDomains(sql, session.org_id),
    metricsReport(sql, { orgId: session.org_id, domain: null, days: 30, mode }),
    live ? countEmailsSince(sql, session.org_id, 'test', midnight, TEST_COUNT_CAP) : 0,
    firstSteps(sql, session.org_id),
    loadReputation(ctx, session.org_id),
  ]);
  const today = { totals: trend.series.at(-1)! };
  const verified = domains.filter((d) => d.status === 'verified').length;
  const attention = domains.filter((d) => d.status !== 'verified');
  const paused = session.sending_paused
    ? html`<div class="banner warn" data-paused="true" role="status">
        <strong>Sending is paused.</strong>
        ${
          session.sending_paused_reason
            ? html` Reason: <span data-paused-reason>${session.sending_paused_reason}</span>.`
            : ' No reason was given.'
        }
        Messages are accepted and held until sending resumes.
      </div>`
    : html`<div class="banner ok" data-paused="false" role="status">Sending is active.</div>`;
  const counts = html`<dl class="stats">
    ${TODAY.map(
      ([k, label]) =>
        html`<div>
          <dt>${label}</dt>
          <dd data-today="${k}">${today.totals[k] ?? 0}</dd>
        </div>`,
    )}
  </dl>`;
  const domainList = attention.length
    ? html`<ul class="plain-list">
          ${attention.map((d) => html`<li>${domainName(d.name)} ${stateBadge(d.status)}</li>`)}
        </ul>
        ${session.role === 'admin' ? html`<p><a href="/console/domains">Publish the DNS records and verify them</a></p>` : ''}`
    : html`<p class="muted">Every domain is verified.</p>`;
  show(ctx, session, {
    title: 'Overview',
    active: '/console',
    lead: html`${session.org_name}`,
    actions: modeSwitch(mode, (m) => hrefWith('/console', { mode: m === 'test' ? m : null })),
    body: html`${paused}${reputationBanner(reputation)}${checklist(session, steps)}
      ${card(
        html`${counts}
          <p class="muted">
            ${live ? 'Live' : 'Test'} mail, UTC day.
            <a href="${hrefWith('/console/metrics', { mode: live ? null : 'test' })}">Metrics</a> has more.
          </p>
          ${
            testToday > 0
              ? html`<p data-test-today="${testToday}">
                  Test mode today:
                  ${testToday >= TEST_COUNT_CAP ? `${TEST_COUNT_CAP.toLocaleString('en')} or more` : testToday}
                  email${testToday === 1 ? '' : 's'}, not counted above (they never leave this machine).
                  <a href="/console/emails?mode=test">See them</a>.
                </p>`
              : ''
          }`,
        { title: 'Today' },
      )}
      ${card(
        stackedDayChart(trend.series, { id: 'trend', title: 'Last 30 days, sent per day by outcome', height: 180 }),
        {
          title: 'Last 30 days',
        },
      )}
      <div class="grid-2">
        ${card(domainList, { title: 'Domains needing attention' })}
        ${card(
          details([
            ['Organization id', html`<code>${session.org_id}</code>`],
            ['Verified domains', html`<span data-verified-domains>${verified}</span>`],
            ['All domains', domains.length],
            ['Signed in as', `${session.email} (${session.role})`],
          ]),
          { title: 'Organization' },
        )}
      </div>`,
  });
}
