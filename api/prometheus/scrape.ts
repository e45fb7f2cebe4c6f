// GET /metrics: the Prometheus text of the whole install, whichever web process answers. Three
// sources, each read at scrape time with a time limit, each optional (a source that fails leaves
// its families out and says so in tern_scrape_source_up, so the rest still reaches Prometheus):
//   redis     the counters and histograms every process records (shared/prom/recorder.ts);
//   queues    BullMQ's job counts, oldest waiting job and workers per queue;
//   postgres  the webhook backlog, paused organizations and blocklist listings (the current state,
//             never a count).
// Plus prom-client's default metrics of this web process. Concurrent scrapes share one reading.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { countPausedOrgs } from '../../shared/db/orgs.js';
import { allChecks, type RblCheckRow } from '../../shared/db/reputation.js';
import { webhookBacklog } from '../../shared/db/webhook-deliveries.js';
import {
  PROCESS_PREFIX,
  RECORDED,
  SCRAPED,
  type HistogramName,
  type RecordedName,
} from '../../shared/prom/families.js';
import { readRecorded, type StoredFamilies, type StoredSeries } from '../../shared/prom/recorder.js';
import type { AppDeps } from '../types.js';
import { queueStates, withTimeout, type QueueState } from './queues.js';

/** Longest wait for one source before the scrape goes on without it. */
const SOURCE_TIMEOUT_MS = 2000;

type Labels = Record<string, string>;

function labelsOf(names: readonly string[], values: string[]): Labels {
  const out: Labels = {};
  names.forEach((n, i) => (out[n] = values[i] ?? ''));
  return out;
}

/** The `_bucket` (cumulative), `_sum` and `_count` samples of one stored histogram series. */
function histogramSamples(family: HistogramName, s: StoredSeries) {
  const f = RECORDED[family];
  const labels = labelsOf(f.labels, s.labels);
  const bounds = new Set([...f.buckets.map(String), ...(s.buckets?.keys() ?? [])]);
  bounds.delete('+Inf');
  let cumulative = 0;
  const buckets = [...bounds]
    .sort((a, b) => Number(a) - Number(b))
    .map((le) => {
      cumulative += s.buckets?.get(le) ?? 0;
      return { labels: { ...labels, le }, value: cumulative, metricName: `${family}_bucket` };
    });
  return [
    ...buckets,
    { labels: { ...labels, le: '+Inf' }, value: s.value, metricName: `${family}_bucket` },
    { labels, value: s.sum ?? 0, metricName: `${family}_sum` },
    { labels, value: s.value, metricName: `${family}_count` },
  ];
}

/**
 * A histogram whose buckets were counted elsewhere (Redis). prom-client's Histogram only counts
 * its own observations, so this is the registry's other kind of member: an object whose `get()`
 * gives the samples, which the registry renders (names, escaping, HELP and TYPE lines).
 */
function storedHistogram(registry: Registry, family: HistogramName, series: Iterable<StoredSeries>): void {
  const values = [...series].flatMap((s) => histogramSamples(family, s));
  const metric = { name: family, help: RECORDED[family].help, type: 'histogram', aggregator: 'sum' as const };
  registry.registerMetric({ ...metric, get: async () => ({ ...metric, values }) } as unknown as Histogram);
}

function addRecorded(registry: Registry, stored: StoredFamilies): void {
  for (const [name, f] of Object.entries(RECORDED) as [RecordedName, (typeof RECORDED)[RecordedName]][]) {
    const series = stored.get(name)?.values() ?? [];
    if (f.type === 'histogram') {
      storedHistogram(registry, name as HistogramName, series);
      continue;
    }
    const counter = new Counter({ name, help: f.help, labelNames: [...f.labels], registers: [registry] });
    for (const s of series) counter.inc(labelsOf(f.labels, s.labels), s.value);
  }
  // Every answered request is one observation of the latency histogram: its counts are the totals.
  const requests = scraped(registry, 'tern_http_requests_total', Counter);
  for (const s of stored.get('tern_http_request_duration_seconds')?.values() ?? []) {
    requests.inc(labelsOf(SCRAPED.tern_http_requests_total.labels, s.labels), s.value);
  }
}

function scraped<M extends typeof Counter | typeof Gauge>(
  registry: Registry,
  name: keyof typeof SCRAPED,
  Metric: M,
): InstanceType<M> {
  const f = SCRAPED[name];
  return new Metric({ name, help: f.help, labelNames: [...f.labels], registers: [registry] }) as InstanceType<M>;
}

function addQueues(registry: Registry, states: QueueState[]): void {
  const jobs = scraped(registry, 'tern_queue_jobs', Gauge);
  const oldest = scraped(registry, 'tern_queue_oldest_waiting_seconds', Gauge);
  const workers = scraped(registry, 'tern_queue_workers', Gauge);
  for (const s of states) {
    for (const [state, n] of Object.entries(s.counts)) jobs.set({ queue: s.queue, state }, n);
    oldest.set({ queue: s.queue }, s.oldestWaitingSeconds);
    if (s.workers !== null) workers.set({ queue: s.queue }, s.workers);
  }
}

interface PostgresFigures {
  backlog: { pending: number; oldestSeconds: number };
  paused: number;
  rbl: RblCheckRow[];
}

async function readPostgres(deps: AppDeps): Promise<PostgresFigures> {
  const [backlog, paused, rbl] = await Promise.all([
    webhookBacklog(deps.sql),
    countPausedOrgs(deps.sql),
    allChecks(deps.sql),
  ]);
  return { backlog, paused, rbl };
}

function addPostgres(registry: Registry, pg: PostgresFigures): void {
  scraped(registry, 'tern_webhook_backlog', Gauge).set(pg.backlog.pending);
  scraped(registry, 'tern_webhook_oldest_pending_seconds', Gauge).set(pg.backlog.oldestSeconds);
  scraped(registry, 'tern_organizations_paused', Gauge).set(pg.paused);
  const rbl = scraped(registry, 'tern_rbl_listed', Gauge);
  for (const r of pg.rbl) rbl.set({ kind: r.kind, target: r.target, zone: r.zone }, r.listed ? 1 : 0);
}

let processRegistry: Registry | null = null;

/** prom-client's default metrics of this process, set up on the first scrape. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: PROCESS_PREFIX });
  }
  return processRegistry;
}

async function render(deps: AppDeps): Promise<string> {
  // This process's last few seconds first; other processes flush on their own timer.
  await deps.prom.flush().catch(() => {});
  const [recorded, queues, pg] = await Promise.allSettled([
    withTimeout(readRecorded(deps.redis, deps.redisKeys.prom), SOURCE_TIMEOUT_MS),
    withTimeout(queueStates(deps.queues), SOURCE_TIMEOUT_MS),
    withTimeout(readPostgres(deps), SOURCE_TIMEOUT_MS),
  ]);
  const registry = new Registry();
  const up = scraped(registry, 'tern_scrape_source_up', Gauge);
  up.set({ source: 'redis' }, recorded.status === 'fulfilled' ? 1 : 0);
  up.set({ source: 'queues' }, queues.status === 'fulfilled' ? 1 : 0);
  up.set({ source: 'postgres' }, pg.status === 'fulfilled' ? 1 : 0);
  if (recorded.status === 'fulfilled') addRecorded(registry, recorded.value);
  if (queues.status === 'fulfilled') addQueues(registry, queues.value);
  if (pg.status === 'fulfilled') addPostgres(registry, pg.value);
  return await Registry.merge([processMetrics(), registry]).metrics();
}

const inflight = new WeakMap<AppDeps, Promise<string>>();

/** The exposition text; a scrape that arrives while one is being built shares its result. */
export function scrape(deps: AppDeps): Promise<string> {
  let p = inflight.get(deps);
  if (!p) {
    p = render(deps).finally(() => inflight.delete(deps));
    inflight.set(deps, p);
  }
  return p;
}

export const CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
