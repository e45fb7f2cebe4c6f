// What the fault suite counts after each fault, all from the outside (the sink, the webhook
// receiver, the metrics API) against Postgres's record, and the targets each row must meet.
// A phase's sends are those the load made while that fault ran; its webhook events are those of
// the messages Postgres stored meanwhile (answered or not).
import type postgres from 'postgres';
import type { Load, Send } from './load.js';
import { eventKey } from './receiver.js';
import type { ChaosStack } from './stack.js';

export interface Phase {
  name: string;
  /** When the load began sending for this phase. */
  startedAt: number;
  /** The moment of the repair (recovery is measured from it); null for the whole-run row. */
  repairedAt: number | null;
}

export interface Row {
  accepted: number;
  delivered: number;
  duplicates: number;
  lost: number;
  refused: number;
  notConnected: number;
  unconfirmed: number;
  unconfirmedDelivered: number;
  refusedDelivered: number;
  whExpected: number;
  whReceived: number;
  whRetried: number;
  whDuplicated: number;
  metricsDelivered: number;
  sinkUnique: number;
  /** Recipients of the org still waiting for a result (whole run). */
  pending: number;
  /** Seconds from the repair to the last arrival of what was sent before it; null: not all arrived. */
  recovery: number | null;
  /** What arrived last (or has not arrived), for the notes under the table. */
  slowest: string;
}

interface StoredEvent {
  type: string;
  email_id: string;
  recipient: string;
  created_at: Date;
  email_at: Date;
}

/** Counts the sends and events of the phases at `phases[i]` (all of them when `i` is null). */
export async function snapshot(
  s: ChaosStack,
  load: Load,
  sql: postgres.Sql,
  phases: Phase[],
  i: number | null,
): Promise<Row> {
  const inPhase = (at: number) => i === null || phaseAt(phases, at) === i;
  const sends = load.sends.filter((x) => i === null || x.phase === i);
  const phaseOfKey = new Map(sends.map((x) => [x.key, x]));
  const arrived = (x: Send) => s.sink.sends.has(x.key);
  const of = (o: Send['outcome']) => sends.filter((x) => x.outcome === o);
  const accepted = of('accepted');
  const refused = [...of('refused'), ...of('not-connected')];
  let duplicates = 0;
  for (const [id, n] of s.sink.accepted) {
    if (n > 1 && (i === null || phaseOfKey.has(s.sink.keyOf.get(id) ?? ''))) duplicates++;
  }
  const rows = await sql<StoredEvent[]>`
    select ev.type, ev.email_id, ev.recipient, ev.created_at, em.created_at as email_at
    from events ev join emails em on em.id = ev.email_id
    where ev.org_id = ${s.org.id}`;
  const events = rows.filter((r) => inPhase(r.email_at.getTime()));
  const keyOf = (r: StoredEvent) => eventKey(r.type, r.email_id, r.recipient, r.created_at.toISOString());
  const expected = new Set(events.map(keyOf));
  let whReceived = 0;
  let whRetried = 0;
  let whDuplicated = 0;
  for (const key of expected) {
    const ids = s.receiver.events.get(key);
    if (!ids) continue;
    whReceived++;
    if (ids.length > 1 && new Set(ids).size === 1) whRetried++;
    if (new Set(ids).size > 1) whDuplicated++;
  }
  const [p] = await sql<{ n: number }[]>`
    select count(*)::int as n from email_recipients where org_id = ${s.org.id}
      and status in ('scheduled', 'queued', 'sent', 'delivery_delayed')`;
  // Two days: a run that crosses midnight UTC counts yesterday's deliveries too.
  const res = await fetch(`${s.apiUrl}/metrics?days=2`, { headers: { authorization: `Bearer ${s.org.token}` } });
  const metrics = res.ok ? ((await res.json()) as { totals: { delivered: number } }).totals.delivered : -1;
  const delivered = accepted.filter(arrived).length;
  return {
    accepted: accepted.length,
    delivered,
    duplicates,
    lost: accepted.length - delivered,
    refused: of('refused').length,
    notConnected: of('not-connected').length,
    unconfirmed: of('unconfirmed').length,
    unconfirmedDelivered: of('unconfirmed').filter(arrived).length,
    refusedDelivered: refused.filter(arrived).length,
    whExpected: expected.size,
    whReceived,
    whRetried,
    whDuplicated,
    metricsDelivered: metrics,
    sinkUnique: s.sink.accepted.size,
    pending: p!.n,
    ...recovery(s, i === null ? null : phases[i]!.repairedAt, accepted, events, keyOf),
  };
}

/** The phase a moment belongs to: the last one started at or before it. */
function phaseAt(phases: Phase[], at: number): number {
  let found = -1;
  phases.forEach((p, i) => {
    if (p.startedAt <= at) found = i;
  });
  return found;
}

/**
 * From the repair to the moment the last message accepted before it reached the sink and the
 * last webhook event of a message stored before it reached the receiver (0 when all were there
 * before the repair); null while one of them has not arrived.
 */
function recovery(
  s: ChaosStack,
  repairedAt: number | null,
  accepted: Send[],
  events: StoredEvent[],
  keyOf: (r: StoredEvent) => string,
): { recovery: number | null; slowest: string } {
  if (repairedAt === null) return { recovery: null, slowest: '' };
  let last = repairedAt;
  let slowest = 'everything arrived before the repair';
  for (const x of accepted) {
    if (x.startedAt >= repairedAt) continue;
    const at = s.sink.sends.get(x.key);
    if (at === undefined) return { recovery: null, slowest: `message ${x.key} not at the sink` };
    if (at > last) [last, slowest] = [at, `message ${x.key} at the sink`];
  }
  // Told apart from the webhooks: how long delivery itself took to recover.
  const messages = `the last message at the sink ${((last - repairedAt) / 1000).toFixed(1)} s after the repair`;
  for (const e of events) {
    if (e.email_at.getTime() >= repairedAt) continue;
    const at = s.receiver.firstAt.get(keyOf(e));
    if (at === undefined) return { recovery: null, slowest: `${e.type} of ${e.email_id} not at the receiver` };
    if (at > last) [last, slowest] = [at, `${e.type} of ${e.email_id} at the receiver`];
  }
  return { recovery: (last - repairedAt) / 1000, slowest: `${slowest}; ${messages}` };
}

/** Everything accepted arrived, nothing waits, every stored event reached the receiver. */
export const settled = (x: Row) => x.lost === 0 && x.pending === 0 && x.whReceived === x.whExpected;
export const exact = (x: Row) => x.metricsDelivered === x.sinkUnique;

export const COLUMNS = [
  'fault',
  'accepted',
  'delivered',
  'dup',
  'lost',
  'refused',
  'not connected',
  'unconfirmed (delivered)',
  'refused but delivered',
  'wh expected',
  'wh received',
  'wh retried (same dlv)',
  'wh dup (other dlv)',
  'metrics/sink',
  'recovery s',
];

export function tableRow(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

export function cells(name: string, x: Row, quietSeconds: number, recoveryText?: string): (string | number)[] {
  return [
    name,
    x.accepted,
    x.delivered,
    x.duplicates,
    x.lost,
    x.refused,
    x.notConnected,
    `${x.unconfirmed} (${x.unconfirmedDelivered})`,
    x.refusedDelivered,
    x.whExpected,
    x.whReceived,
    x.whRetried,
    x.whDuplicated,
    `${x.metricsDelivered}/${x.sinkUnique}`,
    recoveryText ?? (x.recovery === null ? `> ${quietSeconds}` : x.recovery.toFixed(1)),
  ];
}

/** Recovery must be under this many seconds after a fault that names no target of its own. */
export const RECOVERY_TARGET_SECONDS = 60;

/** The targets a row misses, each as one line naming the row. */
export function missed(name: string, x: Row, checkRecovery: boolean, target = RECOVERY_TARGET_SECONDS): string[] {
  const out: string[] = [];
  if (x.lost > 0) out.push(`${name}: ${x.lost} accepted messages not delivered`);
  if (x.duplicates > 0) out.push(`${name}: ${x.duplicates} messages delivered more than once`);
  if (x.refusedDelivered > 0) out.push(`${name}: ${x.refusedDelivered} refused sends delivered all the same`);
  if (x.whReceived < x.whExpected) out.push(`${name}: ${x.whExpected - x.whReceived} webhook events not received`);
  if (x.whDuplicated > 0) out.push(`${name}: ${x.whDuplicated} webhook events under two delivery ids`);
  if (!exact(x)) out.push(`${name}: metrics say ${x.metricsDelivered} delivered, the sink has ${x.sinkUnique}`);
  if (checkRecovery && (x.recovery === null || x.recovery >= target)) {
    out.push(`${name}: recovery not under ${target} s`);
  }
  return out;
}
