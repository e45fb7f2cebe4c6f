// Durations written as text in automations ("30s", "15m", "2h", "3d", "1w", also "2 hours",
// "1 day"): a wait step, a wait_for_event timeout, a last_event condition's `within`. A leaf module
// (no imports), so the SQL in shared/db may use it.
const WAIT = /^(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
export const MAX_WAIT_MS = 365 * 86_400_000;

/** The wait in milliseconds; null when the text is not a duration or exceeds a year. */
export function parseWait(text: string): number | null {
  const m = WAIT.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()[0]!]!;
  return ms <= MAX_WAIT_MS ? ms : null;
}
