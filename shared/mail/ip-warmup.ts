// The warm-up of a pool address (DESIGN §14): a new sending address starts small and grows its
// daily volume while receivers learn its reputation. Counted per UTC day from the day the address
// was added to its pool, on top of the domain's own ramp (workers/delivery/caps.ts); the host's
// default address has none.
const DAY_MS = 86_400_000;

export const IP_WARMUP_RAMP = [
  50, 100, 500, 1_000, 5_000, 10_000, 20_000, 40_000, 70_000, 100_000, 150_000, 250_000, 400_000, 600_000, 1_000_000,
];

/** Day of the ramp (0 on the day the address was added); null once the ramp is over. */
export function addressWarmupDay(startedAt: Date, now: Date): number | null {
  const day = Math.floor(now.getTime() / DAY_MS) - Math.floor(startedAt.getTime() / DAY_MS);
  return day < IP_WARMUP_RAMP.length ? Math.max(0, day) : null;
}

/** Today's cap of an address added at `startedAt`, Infinity once its ramp is over. */
export function addressWarmupCap(startedAt: Date, now: Date): number {
  const day = addressWarmupDay(startedAt, now);
  return day === null ? Infinity : IP_WARMUP_RAMP[day]!;
}
