// Reads a GET /metrics answer with a real text-format parser (parse-prometheus-text-format).
// That parser folds every series of a histogram family into one (it keeps prom2json's shape
// for unlabelled histograms only), so the text is parsed twice: as served, for each family's
// type and help, and once more with the histogram TYPE lines left out, where every `_bucket`,
// `_sum` and `_count` line is a sample of its own with its labels.
import parse from 'parse-prometheus-text-format';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class Scrape {
  /** Family name → its declared type (COUNTER, GAUGE, HISTOGRAM, UNTYPED). */
  readonly types = new Map<string, string>();
  readonly samples: Sample[] = [];

  constructor(readonly text: string) {
    for (const f of parse(text)) this.types.set(f.name, f.type);
    for (const f of parse(text.replace(/^# TYPE \S+ histogram$/gm, ''))) {
      for (const m of f.metrics) {
        if (m.value === undefined) continue;
        this.samples.push({ name: f.name, labels: m.labels ?? {}, value: Number(m.value) });
      }
    }
  }

  /** Samples of `name` whose labels include every pair of `match`. */
  select(name: string, match: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
  }

  /** The sum of the matching samples' values (0 when none match). */
  sum(name: string, match: Record<string, string> = {}): number {
    return this.select(name, match).reduce((n, s) => n + s.value, 0);
  }
}

/** GET /metrics with the token; fails the test on any status but 200. */
export async function scrape(baseUrl: string, token: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status} ${text}`);
  return new Scrape(text);
}
