// The Queues page (admins): the live state of the install's job queues as GET /healthz?verbose=1
// and the Prometheus collector read it (api/prometheus/queues.ts): per queue the jobs waiting,
// active, delayed and failed, the age of the oldest waiting job and the workers connected; per
// mailbox provider the current delivery rate (the pacing bucket in Redis) and the last block reply
// the organization's mail got; the delivery sweeper's last run. `?refresh=N` reloads the page.
import { lastBlockReplies } from '../../shared/db/providers.js';
import { providerRates } from '../../shared/mail/throttle.js';
import { queueStates, withTimeout, type QueueState } from '../prometheus/queues.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest, type PageRule } from './respond.js';
import { badge, card, emptyState, tableCard } from './ui.js';

const TIMEOUT_MS = 2000;

function age(seconds: number): string {
  if (seconds <= 0) return '—';
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

function workers(n: number | null): Safe {
  if (n === null) return badge('unknown', 'neutral');
  return n > 0 ? html`${badge(String(n), 'ok')}` : badge('none', 'bad');
}

function queueRow(s: QueueState): Safe {
  const c = (k: string) => s.counts[k] ?? 0;
  return html`<tr data-queue="${s.queue}">
    <th scope="row">${s.queue}</th>
    <td class="num" data-count="waiting">${c('waiting') + c('prioritized')}</td>
    <td class="num" data-count="active">${c('active')}</td>
    <td class="num" data-count="delayed">${c('delayed')}</td>
    <td class="num" data-count="failed">${c('failed') ? badge(String(c('failed')), 'bad') : '0'}</td>
    <td class="num">${age(s.oldestWaitingSeconds)}</td>
    <td data-workers>${workers(s.workers)}</td>
  </tr>`;
}

function rateText(rate: number): string {
  return rate >= 10 ? `${Math.round(rate)} msg/s` : `${rate.toFixed(2)} msg/s`;
}

async function sweeperLast(ctx: ApiContext): Promise<{ finished_at: string; requeued: number } | null> {
  const raw = await ctx.deps.redis.get(ctx.deps.redisKeys.deliverySweepLast);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as { finished_at: string; requeued: number };
  } catch {
    return null;
  }
}

async function queuesPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { deps } = ctx;
  const [states, rates, blocks, sweep] = await Promise.all([
    withTimeout(queueStates(deps.queues), TIMEOUT_MS),
    withTimeout(providerRates(deps.redis, deps.redisKeys), TIMEOUT_MS),
    lastBlockReplies(deps.sql, session.org_id),
    withTimeout(sweeperLast(ctx), TIMEOUT_MS),
  ]);
  const queues = tableCard(
    [
      'Queue',
      { label: 'Waiting', num: true },
      { label: 'Active', num: true },
      { label: 'Delayed', num: true },
      { label: 'Failed', num: true },
      { label: 'Oldest waiting', num: true },
      'Workers',
    ],
    states.map(queueRow),
    { label: 'Queues', cls: 'dense-sm' },
  );
  const providers = [...new Set([...rates.map((r) => r.provider), ...blocks.map((b) => b.provider)])];
  const providerRows = providers.map((p) => {
    const r = rates.find((x) => x.provider === p);
    const b = blocks.find((x) => x.provider === p);
    return html`<tr data-provider="${p}">
      <th scope="row">${p}</th>
      <td class="nowrap">
        ${r ? html`${rateText(r.rate)} ${r.slowed ? badge('slowed', 'warn') : badge('full speed', 'ok')}` : html`<span class="muted">idle</span>`}
      </td>
      <td>
        ${b ? html`<code>${b.response ?? ''}</code><br /><span class="muted">${when(b.created_at)}</span>` : html`<span class="muted">none</span>`}
      </td>
    </tr>`;
  });
  const providerCard = providers.length
    ? tableCard(['Mailbox provider', 'Current rate', 'Last block reply'], providerRows, { label: 'Mailbox providers' })
    : card(emptyState('No provider paced yet.', 'Rates appear here once delivery workers send to a mailbox provider.'));
  show(ctx, session, {
    title: 'Queues',
    active: '/console/queues',
    lead: html`Live numbers, read when the page loads. <a href="/console/queues">Refresh</a>`,
    body: html`<h2>Job queues</h2>
      ${queues}
      <h2>Mailbox providers</h2>
      ${providerCard}
      ${card(
        sweep
          ? html`<p data-sweep>
              Finished ${when(new Date(sweep.finished_at))}; it put ${sweep.requeued} stuck
              message${sweep.requeued === 1 ? '' : 's'} back on the delivery queues.
            </p>`
          : html`<p data-sweep class="muted">No sweep has finished since Redis last lost its data (or ever).</p>`,
        { title: 'Delivery sweeper' },
      )}`,
  });
}

export const QUEUE_PAGES: PageRule[] = [{ method: 'GET', path: '/queues', role: 'admin', page: queuesPage }];
