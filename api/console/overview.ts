// The overview: whether the organization may send (and why not), today's counts (the metrics
// report of GET /metrics for one day, UTC), and the domains that need attention.
import { listOrgDomains } from '../../shared/db/domains.js';
import { countEmailsSince } from '../../shared/db/email-search.js';
import { metricsReport } from '../../shared/metrics/report.js';
import type { ApiContext } from '../types.js';
import { html } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { card, details, stateBadge } from './ui.js';

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
  const midnight = new Date(new Date().toISOString().slice(0, 10));
  const [domains, today, testToday] = await Promise.all([
    listOrgDomains(sql, session.org_id),
    metricsReport(sql, { orgId: session.org_id, domain: null, days: 1 }),
    countEmailsSince(sql, session.org_id, 'test', midnight, TEST_COUNT_CAP),
  ]);
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
          <dd data-today="${k}">${today.totals[k]}</dd>
        </div>`,
    )}
  </dl>`;
  const domainList = attention.length
    ? html`<ul class="plain-list">
          ${attention.map((d) => html`<li>${d.name} ${stateBadge(d.status)}</li>`)}
        </ul>
        ${session.role === 'admin' ? html`<p><a href="/console/domains">Publish the DNS records and verify them</a></p>` : ''}`
    : html`<p class="muted">Every domain is verified.</p>`;
  show(ctx, session, {
    title: 'Overview',
    active: '/console',
    lead: html`${session.org_name}`,
    body: html`${paused}
      ${card(
        html`${counts}
          <p class="muted">Live mail, UTC day. <a href="/console/metrics">Metrics</a> has the history.</p>
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
