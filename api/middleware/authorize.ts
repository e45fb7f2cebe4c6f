// Authorization of one API route, in the order of DESIGN §3: 401 unauthorized → 429
// rate_limited → 403 forbidden (tier, live-only) → 403 forbidden_domain (routes closed to
// restricted keys) → 403 sending_paused (sending routes) → the route. The route's rule comes
// from the permission table (shared/permissions.ts).
import type Koa from 'koa';
import { isRestricted } from '../../shared/auth.js';
import { ApiError } from '../../shared/errors.js';
import { permits } from '../../shared/keys.js';
import type { RouteRule } from '../../shared/permissions.js';
import type { ApiCustom, ApiState } from '../types.js';

const BEARER = /^Bearer +(\S+)\s*$/i;

const FAILURE_MESSAGES = {
  malformed: 'API key is malformed',
  unknown: 'API key is invalid',
  revoked: 'API key has been revoked',
  expired: 'API key has expired',
} as const;

export function authorize(rule: RouteRule): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    const { auth: authenticator, rateLimiter } = ctx.deps;
    ctx.state.rule = rule;
    const header = ctx.get('authorization');
    if (!header)
      throw new ApiError('unauthorized', 'Missing Authorization header; use "Authorization: Bearer <API key>"');
    const m = BEARER.exec(header);
    if (!m) throw new ApiError('unauthorized', 'Malformed Authorization header; use "Authorization: Bearer <API key>"');
    // Warm keys and leased tokens answer without a pause of the request (no await).
    const result = authenticator.authenticateWarm(m[1]!) ?? (await authenticator.authenticate(m[1]!));
    if (!result.ok) throw new ApiError('unauthorized', FAILURE_MESSAGES[result.reason]);
    const auth = result.auth;
    ctx.state.auth = auth;

    const rl =
      rateLimiter.takeLeased(auth.key.id, auth.org.rateLimit) ??
      (await rateLimiter.take(auth.key.id, auth.org.rateLimit));
    const res = ctx.res;
    res.setHeader('RateLimit-Limit', String(rl.limit));
    res.setHeader('RateLimit-Remaining', String(rl.remaining));
    res.setHeader('RateLimit-Reset', String(rl.resetSeconds));
    if (!rl.allowed) {
      ctx.deps.prom.inc('tern_rate_limited_total', ['api']);
      throw new ApiError('rate_limited', `Too many requests for this API key; retry in ${rl.retryAfterSeconds} s`, {
        'Retry-After': String(rl.retryAfterSeconds),
      });
    }

    if (rule.tier !== 'ANY' && !permits(auth.key.permission, rule.tier)) {
      throw new ApiError(
        'forbidden',
        `${rule.method} ${rule.path} requires ${rule.tier === 'ADMIN' ? 'an ADMIN key' : `a ${rule.tier} key or higher`}; this key is ${auth.key.permission}`,
      );
    }
    if (rule.liveOnly && auth.key.mode !== 'live') {
      throw new ApiError('forbidden', `${rule.method} ${rule.path} requires a live key`);
    }
    if (rule.restricted === 'deny' && isRestricted(auth)) {
      throw new ApiError('forbidden_domain', `Domain-restricted keys cannot call ${rule.method} ${rule.path}`);
    }
    if (rule.sending && auth.org.sendingPaused) {
      const why = auth.org.sendingPausedReason ? `: ${auth.org.sendingPausedReason}` : '';
      throw new ApiError('sending_paused', `Sending is paused for this organization${why}`);
    }
    authenticator.noteUse(auth.key.id);
    await next();
  };
}
