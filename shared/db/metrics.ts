// The metrics tables: their counter columns, claiming events to count (shared/metrics/rollup.ts
// decides what each adds), applying the deltas, and the reads of GET /metrics.
import type { BounceType, EventType } from '../events.js';
import type { Db } from './pool.js';
import { unsafeParams } from './params.js';

/** The counter columns of the metrics tables (which event moves which: shared/metrics/counters.ts). */
export const COUNTERS = [
  'sent',
  'delivered',
  'bounced_hard',
  'bounced_soft',
  'complained',
  'opened',
  'clicked',
  'unsubscribed',
  'delayed',
  'blocked',
  'opened_machine',
  'clicked_machine',
] as const;
export type Counter = (typeof COUNTERS)[number];
export type Counts = Record<Counter, number>;

export function zeroCounts(): Counts {
  return {
    sent: 0,
    delivered: 0,
    bounced_hard: 0,
    bounced_soft: 0,
    complained: 0,
    opened: 0,
    clicked: 0,
    unsubscribed: 0,
    delayed: 0,
    blocked: 0,
    opened_machine: 0,
    clicked_machine: 0,
  };
}

export type Facet = 'provider' | 'key' | 'template' | 'kind' | 'stream';
export const FACETS: readonly Facet[] = ['provider', 'key', 'template', 'kind', 'stream'];

/** One cell of the full grain; '' stands for "none" in every dimension. */
export interface Grain {
  orgId: string;
  /** UTC day, YYYY-MM-DD */
  day: string;
  domainId: string;
  provider: string;
  keyId: string;
  templateId: string;
  kind: string;
  /** The message's delivery stream ('' or absent for events of no message). */
  stream?: string;
}

export interface Delta extends Grain {
  counts: Partial<Counts>;
}

type Acc = Map<string, { cols: string[]; counts: Counts }>;

function add(acc: Acc, cols: string[], counts: Partial<Counts>): void {
  const k = cols.join('\u0000');
  let cell = acc.get(k);
  if (!cell) acc.set(k, (cell = { cols, counts: zeroCounts() }));
  for (const c of COUNTERS) cell.counts[c] += counts[c] ?? 0;
}

/** Sorted so that concurrent rollups lock rows in one order (no deadlocks). */
function sorted(acc: Acc): { cols: string[]; counts: Counts }[] {
  return [...acc.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

function counterArrays(cells: { counts: Counts }[]): Record<Counter, number[]> {
  const out = {} as Record<Counter, number[]>;
  for (const c of COUNTERS) out[c] = cells.map((x) => x.counts[c]);
  return out;
}

const SET_SUMS = COUNTERS.map((c) => `${c} = t.${c} + excluded.${c}`).join(', ');
const COUNTER_LIST = COUNTERS.join(', ');
const UNNEST_COUNTERS = COUNTERS.map((_, i) => `$${i + 1}::bigint[]`);

async function upsert(
  db: Db,
  table: string,
  keyCols: string[],
  keyTypes: string[],
  cells: { cols: string[]; counts: Counts }[],
): Promise<void> {
  if (cells.length === 0) return;
  const counters = counterArrays(cells);
  const keyArrays = keyCols.map((_, i) => cells.map((x) => x.cols[i]!));
  const params = [...COUNTERS.map((c) => counters[c]), ...keyArrays];
  const keyUnnest = keyCols.map((_, i) => `$${COUNTERS.length + i + 1}::${keyTypes[i]}[]`);
  await db.unsafe(
    `insert into ${table} as t (${[...keyCols, COUNTER_LIST].join(', ')})
     select ${[...keyCols, COUNTER_LIST].join(', ')}
     from unnest(${[...keyUnnest, ...UNNEST_COUNTERS].join(', ')}) as u(${[...keyCols, ...COUNTERS].join(', ')})
     on conflict (${primaryKeys[table]}) do update set ${SET_SUMS}`,
    unsafeParams(params),
  );
}

const primaryKeys: Record<string, string> = {
  metrics_daily: 'org_id, day, domain_id, provider, key_id, template_id, kind, stream',
  metrics_daily_totals: 'org_id, domain_id, day',
  metrics_daily_facets: 'org_id, domain_id, facet, day, facet_key',
};

/**
 * Adds counter deltas to the full grain and to the derived totals and facet rows (for the
 * domain and for the organization total, domain ''), in one statement per table.
 */
export async function applyDeltas(db: Db, deltas: Delta[]): Promise<void> {
  const grain: Acc = new Map();
  const totals: Acc = new Map();
  const facets: Acc = new Map();
  for (const d of deltas) {
    add(grain, [d.orgId, d.day, d.domainId, d.provider, d.keyId, d.templateId, d.kind, d.stream ?? ''], d.counts);
    const values: Record<Facet, string> = {
      provider: d.provider,
      key: d.keyId,
      template: d.templateId,
      kind: d.kind,
      stream: d.stream ?? '',
    };
    for (const dom of d.domainId === '' ? [''] : [d.domainId, '']) {
      add(totals, [d.orgId, dom, d.day], d.counts);
      for (const f of FACETS) add(facets, [d.orgId, dom, f, d.day, values[f]], d.counts);
    }
  }
  await upsert(
    db,
    'metrics_daily',
    ['org_id', 'day', 'domain_id', 'provider', 'key_id', 'template_id', 'kind', 'stream'],
    ['text', 'date', 'text', 'text', 'text', 'text', 'text', 'text'],
    sorted(grain),
  );
  await upsert(db, 'metrics_daily_totals', ['org_id', 'domain_id', 'day'], ['text', 'text', 'date'], sorted(totals));
  await upsert(
    db,
    'metrics_daily_facets',
    ['org_id', 'domain_id', 'facet', 'day', 'facet_key'],
    ['text', 'text', 'text', 'date', 'text'],
    sorted(facets),
  );
}

export interface ClaimedEvent {
  id: string;
  org_id: string;
  mode: string;
  type: EventType;
  recipient_id: string | null;
  bounce_type: BounceType | null;
  blocked: boolean;
  domain_id: string | null;
  provider: string | null;
  key_id: string | null;
  template_id: string | null;
  kind: string | null;
  stream: string | null;
  /** An open or click judged a machine's (shared/tracking.ts). */
  machine: boolean | null;
  created_at: Date;
}

const CLAIMED = [
  'id',
  'org_id',
  'mode',
  'type',
  'recipient_id',
  'bounce_type',
  'blocked',
  'domain_id',
  'provider',
  'key_id',
  'template_id',
  'kind',
  'created_at',
];
// The stream is the message's (events do not repeat it): one primary-key look-up per event.
const CLAIMED_COLUMNS = `${CLAIMED.join(', ')}, (select m.stream from emails m where m.id = email_id) as stream,
  (data->>'machine')::boolean as machine`;
const CLAIMED_COLUMNS_E = `${CLAIMED.map((c) => `e.${c}`).join(', ')},
  (select m.stream from emails m where m.id = e.email_id) as stream, (e.data->>'machine')::boolean as machine`;

/** A recipient's first open (or click) counts once for people and once for machines (DESIGN §20). */
export function uniqueType(e: Pick<ClaimedEvent, 'type' | 'machine'>): string {
  return e.machine ? `${e.type}:machine` : e.type;
}

/** Claims the listed events not yet counted (marking them); a batch claimed twice is claimed once. */
export async function claimEvents(tx: Db, eventIds: string[]): Promise<ClaimedEvent[]> {
  const ids = [...new Set(eventIds)].sort();
  return await tx<ClaimedEvent[]>`
    update events set metrics_counted_at = now()
    where id = any(${ids}) and metrics_counted_at is null
    returning ${tx.unsafe(CLAIMED_COLUMNS)}`;
}

/**
 * Claims up to `limit` events not yet counted, oldest first. SKIP LOCKED lets several workers
 * drain at once on disjoint rows.
 */
export async function claimPending(tx: Db, limit: number): Promise<ClaimedEvent[]> {
  return await tx<ClaimedEvent[]>`
    update events e set metrics_counted_at = now()
    from (
      select id from events where metrics_counted_at is null
      order by id limit ${limit} for update skip locked
    ) pending
    where e.id = pending.id
    returning ${tx.unsafe(CLAIMED_COLUMNS_E)}`;
}

/** Of the opens and clicks, the pairs (recipient|type) seen for the first time (recorded now). */
export async function firstEngagements(db: Db, events: ClaimedEvent[]): Promise<Set<string>> {
  const pairs = new Map<string, [string, string]>();
  for (const e of events) {
    if ((e.type === 'email.opened' || e.type === 'email.clicked') && e.recipient_id) {
      pairs.set(`${e.recipient_id}|${uniqueType(e)}`, [e.recipient_id, uniqueType(e)]);
    }
  }
  if (pairs.size === 0) return new Set();
  const list = [...pairs.values()].sort(([a, x], [b, y]) => (a + x < b + y ? -1 : 1));
  const rows = await db<{ recipient_id: string; type: string }[]>`
    insert into metrics_uniques (recipient_id, type)
    select * from unnest(${list.map((p) => p[0])}::text[], ${list.map((p) => p[1])}::text[])
    on conflict do nothing
    returning recipient_id, type`;
  return new Set(rows.map((r) => `${r.recipient_id}|${r.type}`));
}

export interface DayRow extends Counts {
  day: string;
}

const SUMS = COUNTERS.map((c) => `coalesce(sum(${c}), 0)::int as ${c}`).join(', ');

/** One row per day that has data, for the domain (or '' = organization total). */
export async function readSeries(db: Db, orgId: string, domainId: string, from: string, to: string): Promise<DayRow[]> {
  return await db<DayRow[]>`
    select to_char(day, 'YYYY-MM-DD') as day, ${db.unsafe(COUNTERS.map((c) => `${c}::int as ${c}`).join(', '))}
    from metrics_daily_totals
    where org_id = ${orgId} and domain_id = ${domainId} and day between ${from}::date and ${to}::date
    order by day`;
}

/** Test-mode events of one day and kind, with how many there were and of how many recipients. */
export interface TestEventCount {
  day: string;
  type: EventType;
  bounce_type: BounceType | null;
  blocked: boolean;
  /** An open or click judged a machine's (DESIGN §20). */
  machine: boolean;
  n: number;
  uniq: number;
}

/**
 * The test-mode events of a window, which the rollups never count, grouped by day and kind
 * (shared/metrics/report.ts turns them into the daily series). Test mail stays on this machine,
 * so the volumes are a developer's.
 */
export async function readTestEventCounts(
  db: Db,
  orgId: string,
  domainId: string,
  from: string,
  to: string,
): Promise<TestEventCount[]> {
  return await db<TestEventCount[]>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, type, bounce_type, blocked,
      coalesce((data->>'machine')::boolean, false) as machine,
      count(*)::int as n, count(distinct recipient_id)::int as uniq
    from events
    where org_id = ${orgId} and mode = 'test'
      and created_at >= ${from}::date and created_at < ${to}::date + 1
      ${domainId ? db`and domain_id = ${domainId}` : db``}
    group by 1, 2, 3, 4, 5`;
}

/** Each domain's totals over a window (rows of domains with mail only), busiest first. */
export async function readDomainTotals(
  db: Db,
  orgId: string,
  from: string,
  to: string,
): Promise<(Counts & { domain_id: string })[]> {
  return await db<(Counts & { domain_id: string })[]>`
    select domain_id, ${db.unsafe(SUMS)}
    from metrics_daily_totals
    where org_id = ${orgId} and domain_id <> '' and day between ${from}::date and ${to}::date
    group by domain_id
    order by sum(sent) desc, domain_id`;
}

export interface FacetRow extends Counts {
  facet_key: string;
}

export async function readFacet(
  db: Db,
  orgId: string,
  domainId: string,
  facet: Facet,
  from: string,
  to: string,
  key: string | null,
): Promise<FacetRow[]> {
  return await db<FacetRow[]>`
    select facet_key, ${db.unsafe(SUMS)}
    from metrics_daily_facets
    where org_id = ${orgId} and domain_id = ${domainId} and facet = ${facet}
      and day between ${from}::date and ${to}::date
      ${key !== null ? db`and facet_key = ${key}` : db``}
    group by facet_key
    order by sum(sent) desc, facet_key`;
}

export async function keyNames(db: Db, orgId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db<{ id: string; name: string }[]>`
    select id, name from api_keys where org_id = ${orgId} and id = any(${ids})`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function templateNames(db: Db, orgId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db<{ id: string; name: string }[]>`
    select id, name from templates where org_id = ${orgId} and id = any(${ids})`;
  return new Map(rows.map((r) => [r.id, r.name]));
}
