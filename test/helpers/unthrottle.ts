// Raises an organization's per-key rate limit for tests that make many requests with one key;
// the rate limit itself is tested elsewhere.
import type { TestApi } from './stack.js';

export async function unthrottle(api: TestApi, orgId: string): Promise<void> {
  await api.deps.sql`
    update organizations set rate_limit_per_second = 10000, rate_limit_burst = 10000 where id = ${orgId}`;
  await api.deps.auth.invalidateOrg(orgId);
}
