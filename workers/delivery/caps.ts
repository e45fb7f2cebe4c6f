// DESIGN §9 daily caps: a domain ramps up from the day it was verified, then only the org's own
// daily cap applies. Counted per UTC day, live recipients only.
const DAY_MS = 86_400_000;
export const WARMUP_RAMP = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000, 50_000];

function utcDay(d: Date): number {
  return Math.floor(d.getTime() / DAY_MS);
}

export function utcDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export function nextUtcMidnight(now: Date): Date {
  return new Date((utcDay(now) + 1) * DAY_MS);
}

/** Today's warm-up cap of a domain verified at `verifiedAt`, Infinity once the ramp is over. */
export function warmupCap(verifiedAt: Date | null, now: Date): number {
  if (!verifiedAt) return WARMUP_RAMP[0]!;
  const day = utcDay(now) - utcDay(verifiedAt);
  return day < WARMUP_RAMP.length ? WARMUP_RAMP[Math.max(0, day)]! : Infinity;
}
