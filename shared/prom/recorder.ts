// Cluster-wide counters for Prometheus. Every process (web, relay, mx, worker) counts what it
// does in memory, at the cost of a few Map look-ups per event, and adds the increments to one Redis
// hash every few seconds (HINCRBY in one MULTI); the web process reads the hash at GET /metrics.
// So one scrape target covers every process, and the totals survive a process restart (only a
// loss of Redis's data resets them, which Prometheus reads as a counter reset). Increments a
// flush could not write are kept and added to the next flush: a Redis outage delays figures,
// it does not lose them (a process killed loses at most its last few seconds).
//
// Hash fields: `<family>["v1","v2"]` for a counter; `<family>["v1"]#<le>` for the observations
// of a histogram that fell in the bucket ending at `le` (not cumulative; `+Inf` for the rest)
// and `<family>["v1"]#sum` for their sum.
import type { Logger } from '../logger.js';
import type { Redis } from '../redis.js';
import { RECORDED, type CounterName, type HistogramName, type LabelValues, type RecordedName } from './families.js';

/** How often a process adds its increments to Redis. */
export const FLUSH_INTERVAL_MS = 5000;

const BUCKET_NAMES = new Map<string, string[]>(
  Object.entries(RECORDED)
    .filter(([, f]) => f.type === 'histogram')
    .map(([name, f]) => [name, [...(f as { buckets: readonly number[] }).buckets.map(String), '+Inf']]),
);

/** The increments of one series since the last flush. */
interface Pending {
  labels: readonly string[];
  /** Counter: its increment; histogram: its observations. */
  n: number;
  /** Histograms: observations per bucket (the last is +Inf) and their sum. */
  buckets: number[] | null;
  sum: number;
}

/** Series by family, then by each label value in turn (Map<string, Map<…, Pending>>). */
type Tree = Map<string, unknown>;

export class PromRecorder {
  /**
   * Kept for the life of the process (as many series as label values, which stay few): the hot
   * path looks its series up with the label strings it already has, building no key, and a flush
   * only zeroes the counts.
   */
  private readonly tree: Tree = new Map();
  private timer: NodeJS.Timeout | null = null;
  private failing = false;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly logger: Logger,
  ) {}

  private series(family: RecordedName, labels: readonly string[]): Pending {
    let node = this.tree.get(family) as Tree | undefined;
    if (!node) this.tree.set(family, (node = new Map()));
    for (let i = 0; i < labels.length - 1; i++) {
      let next = node.get(labels[i]!) as Tree | undefined;
      if (!next) node.set(labels[i]!, (next = new Map()));
      node = next;
    }
    const last = labels.length > 0 ? labels[labels.length - 1]! : '';
    let s = node.get(last) as Pending | undefined;
    if (!s) {
      const bounds = BUCKET_NAMES.get(family);
      s = { labels: [...labels], n: 0, buckets: bounds ? new Array<number>(bounds.length).fill(0) : null, sum: 0 };
      node.set(last, s);
    }
    return s;
  }

  /** Adds `by` to a counter. */
  inc<F extends CounterName>(family: F, labels: LabelValues<F>, by = 1): void {
    this.series(family, labels).n += by;
  }

  /** Records one observation (seconds) in a histogram. */
  observe<F extends HistogramName>(family: F, labels: LabelValues<F>, value: number): void {
    const s = this.series(family, labels);
    const bounds = RECORDED[family].buckets;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.buckets![i]! += 1;
    s.n += 1;
    s.sum += value;
  }

  /** Every series with increments, as copies; the originals are zeroed. */
  private take(): { family: RecordedName; pending: Pending }[] {
    const out: { family: RecordedName; pending: Pending }[] = [];
    const walk = (family: RecordedName, node: Tree): void => {
      for (const v of node.values()) {
        if (v instanceof Map) walk(family, v as Tree);
        else if ((v as Pending).n > 0) {
          const s = v as Pending;
          out.push({ family, pending: { ...s, buckets: s.buckets && [...s.buckets] } });
          s.n = 0;
          s.sum = 0;
          s.buckets?.fill(0);
        }
      }
    };
    for (const [family, node] of this.tree) walk(family as RecordedName, node as Tree);
    return out;
  }

  /** Puts taken increments back (their flush failed). */
  private giveBack(taken: { family: RecordedName; pending: Pending }[]): void {
    for (const { family, pending } of taken) {
      const s = this.series(family, pending.labels);
      s.n += pending.n;
      s.sum += pending.sum;
      pending.buckets?.forEach((n, i) => (s.buckets![i]! += n));
    }
  }

  /** Adds the increments counted so far to Redis; on failure they are kept for the next flush. */
  async flush(): Promise<void> {
    const taken = this.take();
    if (taken.length === 0) return;
    const multi = this.redis.multi();
    for (const { family, pending } of taken) {
      const series = family + JSON.stringify(pending.labels);
      if (!pending.buckets) {
        multi.hincrby(this.key, series, pending.n);
        continue;
      }
      const names = BUCKET_NAMES.get(family)!;
      pending.buckets.forEach((n, i) => n > 0 && multi.hincrby(this.key, `${series}#${names[i]}`, n));
      multi.hincrbyfloat(this.key, `${series}#sum`, pending.sum);
    }
    try {
      const results = await multi.exec();
      if (!results) throw new Error('MULTI aborted');
      const failed = results.find(([err]) => err);
      if (failed) throw failed[0] instanceof Error ? failed[0] : new Error(String(failed[0]));
      if (this.failing) this.logger.info({ event: 'PROMETHEUS_FLUSH_RECOVERED' }, 'metrics flush works again');
      this.failing = false;
    } catch (err) {
      this.giveBack(taken);
      if (!this.failing) {
        this.logger.warn(
          { event: 'PROMETHEUS_FLUSH_FAILED', err },
          'metrics could not be added to Redis; kept for later',
        );
      }
      this.failing = true;
      throw err;
    }
  }

  /** Flushes every FLUSH_INTERVAL_MS until close(). */
  start(intervalMs = FLUSH_INTERVAL_MS): this {
    this.timer ??= setInterval(() => void this.flush().catch(() => {}), intervalMs).unref();
    return this;
  }

  /** Stops the timer and makes a last flush (its failure is logged, not thrown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(() => {});
  }
}

/** One recorded series: its label values, and its value (counter) or buckets and sum (histogram). */
export interface StoredSeries {
  labels: string[];
  value: number;
  /** Histograms: observations per bucket upper bound (`+Inf` last), not cumulative. */
  buckets?: Map<string, number>;
  sum?: number;
}

/** The recorded hash, decoded: family → series key (the labels' JSON) → series. */
export type StoredFamilies = Map<RecordedName, Map<string, StoredSeries>>;

/** Reads every recorded family from the hash; fields of unknown families are skipped. */
export async function readRecorded(redis: Redis, key: string): Promise<StoredFamilies> {
  const hash = await redis.hgetall(key);
  const out: StoredFamilies = new Map();
  for (const [field, raw] of Object.entries(hash)) {
    const open = field.indexOf('[');
    const family = field.slice(0, open) as RecordedName;
    if (open < 0 || !(family in RECORDED)) continue;
    // A counter's field ends with its labels' JSON; a histogram's with `#<le>` or `#sum`.
    const isPart = !field.endsWith(']');
    const hashAt = field.lastIndexOf('#');
    const json = isPart ? field.slice(open, hashAt) : field.slice(open);
    const series = out.get(family) ?? new Map<string, StoredSeries>();
    out.set(family, series);
    let entry = series.get(json);
    if (!entry) {
      entry = { labels: JSON.parse(json) as string[], value: 0 };
      series.set(json, entry);
    }
    const n = Number(raw);
    if (!isPart) {
      entry.value += n;
    } else if (field.slice(hashAt + 1) === 'sum') {
      entry.sum = (entry.sum ?? 0) + n;
    } else {
      entry.buckets ??= new Map();
      entry.buckets.set(field.slice(hashAt + 1), n);
      entry.value += n;
    }
  }
  return out;
}
