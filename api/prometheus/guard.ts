// Who may read GET /metrics and GET /healthz?verbose=1 (they name queues, counts and versions):
// with PROMETHEUS_TOKEN set, a request bearing that token (401 otherwise); without it, anyone
// when PROMETHEUS_PUBLIC=true (`npm start` sets it for a laptop), else nobody (403). The token is
// compared in constant time (both sides hashed first, so not even its length shows).
import { ApiError } from '../../shared/errors.js';
import { sameSecret } from '../../shared/same-secret.js';
import type { ApiContext } from '../types.js';

const BEARER = /^Bearer +(\S+)\s*$/i;

/** Throws the refusal of a request that may not read the monitoring routes. */
export function checkMonitoringAccess(ctx: ApiContext): void {
  const { prometheusToken, prometheusPublic } = ctx.deps.config;
  if (prometheusToken) {
    const m = BEARER.exec(ctx.get('authorization'));
    if (m && sameSecret(m[1]!, prometheusToken)) return;
    throw new ApiError(
      'unauthorized',
      m ? 'Invalid monitoring token' : 'Missing "Authorization: Bearer <PROMETHEUS_TOKEN>"',
      { 'WWW-Authenticate': 'Bearer realm="tern-monitoring"' },
    );
  }
  if (!prometheusPublic) {
    throw new ApiError(
      'forbidden',
      `${ctx.path} is closed: set PROMETHEUS_TOKEN (and send it as a bearer token), or PROMETHEUS_PUBLIC=true`,
    );
  }
}
