// Groups the same step of many concurrent jobs into one call (one statement or one Redis round
// trip for many items): items added while a batch is in flight wait for it and go together in the
// next one, so a quiet process runs each item at once (one event-loop turn later) and a busy one
// runs fewer, larger batches. A failed batch is retried item by item, so that one bad item fails
// its own job only.

export interface MicroBatchOptions<I> {
  /** Most items in one batch (default 200). */
  maxItems?: number;
  /** Batches in flight at once (default 1). */
  maxInFlight?: number;
  /** Items with the same key never share a batch (e.g. two writes of one row in one statement). */
  keyOf?: (item: I) => string;
  /**
   * Whether a failed batch is run again item by item (default: always). False for a failure that
   * concerns every item alike (an outage): each item then fails with the batch's error.
   */
  splitOn?: (err: unknown) => boolean;
}

interface Pending<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (err: unknown) => void;
}

export class MicroBatcher<I, O> {
  private queue: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly maxItems: number;
  private readonly maxInFlight: number;

  /** `run` returns one result per item, in order. */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: MicroBatchOptions<I> = {},
  ) {
    this.maxItems = opts.maxItems ?? 200;
    this.maxInFlight = opts.maxInFlight ?? 1;
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // One turn of the event loop: what the jobs of this turn add goes in the same batch.
    setImmediate(() => {
      this.scheduled = false;
      this.next();
    });
  }

  private take(): Pending<I, O>[] {
    const { keyOf } = this.opts;
    if (!keyOf) return this.queue.splice(0, this.maxItems);
    const keys = new Set<string>();
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    for (const p of this.queue) {
      const key = keyOf(p.item);
      if (batch.length < this.maxItems && !keys.has(key)) {
        keys.add(key);
        batch.push(p);
      } else rest.push(p);
    }
    this.queue = rest;
    return batch;
  }

  private next(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.runBatch(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  private async runBatch(batch: Pending<I, O>[]): Promise<void> {
    try {
      const out = await this.run(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      if (batch.length === 1 || !(this.opts.splitOn?.(err) ?? true)) {
        for (const p of batch) p.reject(err);
        return;
      }
      // Each on its own: only the item at fault fails.
      await Promise.all(
        batch.map(async (p) => {
          try {
            p.resolve((await this.run([p.item]))[0]!);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }
}
