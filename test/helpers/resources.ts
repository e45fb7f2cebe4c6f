// Every server, pool, worker or connection a test helper opens is registered here; the root
// hook fails the run when a test file leaves one open.
export interface Tracked {
  name: string;
  close(): Promise<void>;
}

const open = new Map<number, Tracked & { origin: string }>();
let next = 1;

/** The test file (not a helper) that asked for the resource, from the call stack. */
export function origin(): string {
  const stack = new Error().stack ?? '';
  const frame = stack.split('\n').find((l) => /\/test\/(unit|int)\//.test(l));
  return frame?.trim().replace(/^at\s+/, '') ?? 'unknown test file';
}

export function track(name: string, close: () => Promise<void>): () => Promise<void> {
  const id = next++;
  open.set(id, { name, close, origin: origin() });
  return async () => {
    if (!open.delete(id)) return;
    await close();
  };
}

/** Closes and returns what was left open (the hook turns it into a failure). */
export async function drainLeaks(): Promise<string[]> {
  const leaks = [...open.values()].map((t) => `${t.name} (opened at ${t.origin})`);
  for (const [id, t] of open) {
    open.delete(id);
    // Already reported as a leak; a failure to close it as well would only hide that report.
    await t.close().catch(() => {});
  }
  return leaks;
}
