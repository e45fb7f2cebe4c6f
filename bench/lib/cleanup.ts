// Cleanup of a run that starts private services (the fault suite): the steps registered here run
// once, last registered first, whether the run ends normally, throws, or is interrupted (SIGINT,
// SIGTERM, SIGHUP: the run exits 130 / 143 / 129 after cleaning up). What those steps would stop
// is also written to a state file watched by a detached reaper (bench/lib/reaper.ts), which
// cleans up after a run that was killed outright.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { entry } from './processes.js';
import { startTimeOf, type ReapItem } from './reaper.js';

const fromSource = import.meta.url.endsWith('.ts');
const SIGNAL_EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };

export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];
  private readonly stateFile: string;
  private readonly reaper: ChildProcess;
  private done: Promise<void> | null = null;

  /** `dir`: where the reaper's state file lives. */
  constructor(dir: string) {
    this.stateFile = join(dir, 'cleanup.jsonl');
    writeFileSync(this.stateFile, '');
    const args = [...(fromSource ? ['--import', 'tsx'] : []), entry('bench/lib/reaper'), String(process.pid)];
    this.reaper = spawn(process.execPath, [...args, this.stateFile], { detached: true, stdio: 'ignore' });
    this.reaper.unref();
    for (const [signal, code] of Object.entries(SIGNAL_EXIT) as [NodeJS.Signals, number][]) {
      process.once(signal, () => {
        process.stderr.write(`\n${signal}: cleaning up the private services…\n`);
        void this.run().finally(() => process.exit(code));
      });
    }
  }

  /** A step for the end of the run, with what the reaper must stop if the run cannot. */
  add(name: string, run: () => Promise<void>, reap: ReapItem[] = []): void {
    this.steps.push({ name, run });
    this.record(reap);
  }

  /** Tells the reaper about a process started after its step was added (a restart). */
  process(pid: number | null | undefined): void {
    const start = pid ? startTimeOf(pid) : null;
    if (pid && start) this.record([{ kill: pid, start }]);
  }

  private record(items: ReapItem[]): void {
    if (items.length > 0) appendFileSync(this.stateFile, items.map((i) => `${JSON.stringify(i)}\n`).join(''));
  }

  /** Runs every step once (later calls wait for the first), then stops the reaper. */
  run(): Promise<void> {
    this.done ??= (async () => {
      for (const step of this.steps.reverse()) {
        await step.run().catch((err: unknown) => process.stderr.write(`cleanup: ${step.name}: ${String(err)}\n`));
      }
      rmSync(this.stateFile, { force: true });
      this.reaper.kill('SIGTERM');
    })();
    return this.done;
  }
}
