// What the auth layer (api/middleware/authorize.ts) must answer a key on a row of the permission
// table, before the handler runs (DESIGN §3 order). Shared by the permission-table walk and the
// cross-tenant sweep, which both call every row with keys of every tier.
import { permits, type Mode, type Permission } from '../../shared/keys.js';
import type { RouteRule } from '../../shared/permissions.js';

export interface Caller {
  label: string;
  permission: Permission;
  mode: Mode;
  restricted: boolean;
  token: string;
}

export type AuthExpected =
  { status: 403; code: 'forbidden' | 'forbidden_domain'; contains: string } | { status: 'route' };

export function authExpected(rule: RouteRule, c: Pick<Caller, 'permission' | 'mode' | 'restricted'>): AuthExpected {
  if (rule.tier !== 'ANY' && !permits(c.permission, rule.tier)) {
    return { status: 403, code: 'forbidden', contains: rule.tier };
  }
  if (rule.liveOnly && c.mode !== 'live') return { status: 403, code: 'forbidden', contains: 'live key' };
  if (rule.restricted === 'deny' && c.restricted) {
    return { status: 403, code: 'forbidden_domain', contains: '' };
  }
  return { status: 'route' };
}

/** The key combinations of the ladder: SEND and FULL live and test, ADMIN live (SPEC "Permissions"). */
export const TIERS: readonly { permission: Permission; mode: Mode }[] = [
  { permission: 'SEND', mode: 'live' },
  { permission: 'SEND', mode: 'test' },
  { permission: 'FULL', mode: 'live' },
  { permission: 'FULL', mode: 'test' },
  { permission: 'ADMIN', mode: 'live' },
];
