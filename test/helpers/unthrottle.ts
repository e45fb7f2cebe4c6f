// Sets an organization's per-key rate limit from a test: `unthrottle` raises it for tests that make
// many requests with one key (the rate limit itself is tested elsewhere); `setRateLimit` gives the
// rate-limit tests the exact limit they exercise. Both tell the web processes at once.
import type { TestApi } from './stack.js';

export async function setRateLimit(api: TestApi, orgId: string, perSecond: number, burst: number): Promise<void> {
  await api.deps.sql`
    update organizations set rate_limit_per_second = ${perSecond}, rate_limit_burst = ${burst} where id = ${orgId}`;
  await api.deps.auth.invalidateOrg(orgId);
}

export async function unthrottle(api: TestApi, orgId: string): Promise<void> {
  await setRateLimit(api, orgId, 10_000, 10_000);
}
