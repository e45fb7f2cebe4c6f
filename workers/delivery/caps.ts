// DESIGN §9 daily caps: a domain ramps up from the day it was verified (unless it is marked
// established), then only the org's own daily cap applies. On top of both, each address of the
// message's IP pool follows its own warm-up ramp (shared/mail/ip-warmup.ts). Counted per UTC day,
// live recipients only; recipients over a cap wait for the next UTC day, never dropped.
import {
  holdRecipients,
  reserveCap,
  type CapAddress,
  type DeliveryEmail,
  type DeliveryRecipient,
} from '../../shared/db/delivery.js';
import { addressWarmupCap } from '../../shared/mail/ip-warmup.js';
import type { WorkerDeps } from '../deps.js';

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

/** The domain's cap today: none for an established domain. */
function domainCap(email: DeliveryEmail, now: Date): number {
  return email.domain_warmup ? warmupCap(email.domain_verified_at, now) : Infinity;
}

/** The message's pool addresses with today's warm-up cap of each. */
function poolAddresses(email: DeliveryEmail, now: Date): CapAddress[] {
  return (email.pool?.addresses ?? []).map((a) => ({
    address: a.address,
    cap: addressWarmupCap(new Date(a.warmup_started_at), now),
  }));
}

const uncounted = (r: DeliveryRecipient) => r.cap_day === null && r.status === 'queued' && !r.suppressed;

export function capsApply(email: DeliveryEmail, due: DeliveryRecipient[], now: Date): boolean {
  if (email.mode === 'test') return false;
  const warming = poolAddresses(email, now).some((a) => a.cap !== Infinity);
  if (domainCap(email, now) === Infinity && email.daily_cap === null && !warming) return false;
  return due.some(uncounted);
}

/**
 * The address each recipient leaves from: the one it was counted on today, else one of the pool's
 * addresses picked by its id (spread evenly, the same on every retry); null: the host's default.
 */
export function sourceAddresses(email: DeliveryEmail, counted: Map<string, string | null>) {
  const addresses = (email.pool?.addresses ?? []).map((a) => a.address);
  return (recipientId: string): string | null => {
    const placed = counted.get(recipientId);
    if (placed) return placed;
    if (addresses.length === 0) return null;
    let h = 0;
    for (let i = 0; i < recipientId.length; i++) h = (h * 31 + recipientId.charCodeAt(i)) | 0;
    return addresses[Math.abs(h) % addresses.length]!;
  };
}

/**
 * Live only: recipients over today's caps wait for the next UTC day (status stays queued). Returns
 * the recipients that go on and the pool address each was counted on.
 */
export async function checkCaps(deps: WorkerDeps, email: DeliveryEmail, due: DeliveryRecipient[]) {
  const now = new Date();
  const ids = due.filter(uncounted).map((r) => r.id);
  const counted = await reserveCap(deps.sql, {
    orgId: email.org_id,
    domainId: email.domain_id,
    day: utcDate(now),
    ids,
    domainCap: domainCap(email, now),
    orgCap: email.daily_cap ?? Infinity,
    addresses: poolAddresses(email, now),
  });
  const over = ids.filter((id) => !counted.has(id));
  const until = nextUtcMidnight(now);
  await holdRecipients(deps.sql, over, `over daily cap until ${until.toISOString()}`, until);
  const held = new Set(over);
  return { due: due.filter((r) => !held.has(r.id)), counted };
}
