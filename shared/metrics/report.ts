// The metrics report of GET /metrics and of the console's Metrics page (one code path, so the two
// always show the same numbers): the daily series of a window that ends today (UTC), its totals
// and rates, and an optional facet breakdown. Reads rollup rows only.
import {
  keyNames,
  readFacet,
  readSeries,
  readTestEventCounts,
  templateNames,
  zeroCounts,
  type Counter,
  type Counts,
  type DayRow,
  type Facet,
  type FacetRow,
} from '../db/metrics.js';
import type { Db } from '../db/pool.js';
import { providerLabel } from '../mail/providers.js';
import { countersOf, FACET_FIELDS, ratesOf, SERIES_FIELDS } from './counters.js';

const DAY_MS = 86_400_000;

/** The `key` that stands for rows without a facet value (no provider, key, template or kind). */
export const NONE_KEY = 'none';

export interface MetricsRequest {
  orgId: string;
  /** null = the organization total. */
  domain: { id: string; name: string } | null;
  days: number;
  facet?: Facet | undefined;
  /** With facet: only the row with this key (NONE_KEY for the empty one). */
  key?: string | undefined;
  /** 'test': test-key mail, counted from its events (no facets); live mail otherwise. */
  mode?: 'live' | 'test' | undefined;
}

export type SeriesRow = { day: string } & Record<string, number | string>;
export type FacetEntry = { key: string; label: string } & Record<string, number | string>;

export interface MetricsReport {
  object: 'metrics';
  days: number;
  domain: string | null;
  series: SeriesRow[];
  totals: Record<string, number>;
  rates: ReturnType<typeof ratesOf>;
  facet?: Facet;
  by?: FacetEntry[];
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function pickCounts(c: Counts, fields: typeof SERIES_FIELDS | typeof FACET_FIELDS): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [api, col] of fields) out[api] = c[col];
  return out;
}

async function labelsFor(db: Db, orgId: string, facet: Facet, rows: FacetRow[]): Promise<Map<string, string>> {
  const keys = rows.map((r) => r.facet_key).filter((k) => k !== '');
  const names =
    facet === 'key'
      ? await keyNames(db, orgId, keys)
      : facet === 'template'
        ? await templateNames(db, orgId, keys)
        : new Map<string, string>();
  const labels = new Map<string, string>();
  for (const k of keys) {
    if (facet === 'provider') labels.set(k, providerLabel(k));
    else if (facet === 'kind' || facet === 'stream') labels.set(k, k);
    else labels.set(k, names.get(k) ?? k);
  }
  const none = { provider: 'Unknown', key: 'No key', template: 'No template', kind: 'No kind', stream: 'No stream' }[
    facet
  ];
  labels.set('', none);
  return labels;
}

async function facetRows(db: Db, r: MetricsRequest, domainKey: string, from: string, to: string) {
  const facet = r.facet!;
  const facetKey = r.key === undefined ? null : r.key === NONE_KEY ? '' : r.key;
  const rows = await readFacet(db, r.orgId, domainKey, facet, from, to, facetKey);
  const labels = await labelsFor(db, r.orgId, facet, rows);
  return rows.map((row): FacetEntry => ({
    key: row.facet_key === '' ? NONE_KEY : row.facet_key,
    label: labels.get(row.facet_key) ?? row.facet_key,
    ...pickCounts(row, FACET_FIELDS),
  }));
}

/**
 * The daily series of test-mode mail, counted from its events with the counters of live mail
 * (`countersOf`): an open or click counts once per recipient, people's and machines' apart.
 */
async function readTestSeries(db: Db, orgId: string, domainId: string, from: string, to: string): Promise<DayRow[]> {
  const days = new Map<string, DayRow>();
  for (const r of await readTestEventCounts(db, orgId, domainId, from, to)) {
    const day = days.get(r.day) ?? { ...zeroCounts(), day: r.day };
    days.set(r.day, day);
    const times = r.type === 'email.opened' || r.type === 'email.clicked' ? r.uniq : r.n;
    for (const [c, v] of Object.entries(countersOf(r)) as [Counter, number][]) day[c] += v * times;
  }
  return [...days.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
}

export async function metricsReport(db: Db, r: MetricsRequest, now = Date.now()): Promise<MetricsReport> {
  const to = utcDay(now);
  const from = utcDay(now - (r.days - 1) * DAY_MS);
  const domainKey = r.domain?.id ?? '';

  const test = r.mode === 'test';
  const read = test ? readTestSeries : readSeries;
  const stored = new Map((await read(db, r.orgId, domainKey, from, to)).map((row) => [row.day, row]));
  const totals = zeroCounts();
  const series: SeriesRow[] = [];
  for (let i = r.days - 1; i >= 0; i--) {
    const day = utcDay(now - i * DAY_MS);
    const row = stored.get(day) ?? { ...zeroCounts(), day };
    for (const [, col] of FACET_FIELDS) totals[col] += row[col];
    series.push({ day, ...pickCounts(row, SERIES_FIELDS) });
  }
  const by = r.facet ? (test ? [] : await facetRows(db, r, domainKey, from, to)) : undefined;
  return {
    object: 'metrics',
    days: r.days,
    domain: r.domain ? r.domain.name : null,
    series,
    totals: pickCounts(totals, SERIES_FIELDS),
    rates: ratesOf(totals),
    ...(r.facet ? { facet: r.facet, by } : {}),
  };
}
