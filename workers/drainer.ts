// Drains a Postgres-backed queue of record (events not yet counted, not yet fanned out …) in
// batches, one pass at a time per process; queue jobs and timers only kick it.

/**
 * Runs one drain at a time. A kick during a drain makes it go round once more, so every kick's
 * promise settles after a pass that started after the kick.
 */
export class Drainer {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly step: () => Promise<{ claimed: number }>,
    private readonly batch: number,
  ) {}

  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop();
    return this.running;
  }

  private async loop(): Promise<void> {
    // `running` is assigned before the first pass starts, and cleared in the same synchronous
    // stretch as the last check of `again`: a kick between the two (a `.finally` callback one
    // microtask later) would be lost until the next timed drain.
    await Promise.resolve();
    try {
      do {
        this.again = false;
        while ((await this.step()).claimed >= this.batch) {
          // a full batch: there may be more
        }
      } while (this.again);
    } finally {
      this.running = null;
    }
  }
}
