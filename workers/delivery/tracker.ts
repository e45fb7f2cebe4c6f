// The tracking link helpers (shared/tracking.ts, owned by the tracking side). Loaded by name so
// that the delivery engine builds before that module lands; a message that needs tracking or an
// unsubscribe URL fails with a clear error if it is missing.
// TODO(merge): once shared/tracking.ts is on main, import it statically instead.
import type { Tracker } from '../../shared/mail/render.js';

export async function loadTracker(): Promise<Tracker> {
  const spec = '../../shared/tracking.js';
  try {
    return (await import(spec)) as Tracker;
  } catch {
    const missing = (): never => {
      throw new Error('shared/tracking.ts is not installed: cannot add tracking or unsubscribe links');
    };
    return { instrumentHtml: missing, unsubscribeUrl: missing };
  }
}
