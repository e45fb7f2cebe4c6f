// GET /metrics (SPEC): daily counters for the organization or one domain, with an optional
// facet breakdown, as JSON or CSV. Reads rollup rows only (shared/db/metrics.ts), so the cost
// does not grow with mail volume.
import { isRestricted, type AuthContext, type AuthDomain } from '../../shared/auth.js';
import { ApiError, validationError } from '../../shared/errors.js';
import { normalizeDomainName } from '../../shared/mail/domain-name.js';
import { FACET_FIELDS, SERIES_FIELDS } from '../../shared/metrics/counters.js';
import { metricsReport } from '../../shared/metrics/report.js';
import { csvText } from '../../shared/csv/write.js';
import { type MetricsQuery } from '../schemas/metrics.js';
import type { Handlers } from '../types.js';
import { routeQuery } from '../route-schemas.js';

/** The domain the query names, as this key may read it; null = organization total. */
function resolveDomain(auth: AuthContext, ref: string | undefined): AuthDomain | null {
  if (ref === undefined) {
    if (isRestricted(auth)) {
      throw new ApiError('forbidden_domain', 'A domain-restricted key must pass domain (one of its own domains)');
    }
    return null;
  }
  const name = normalizeDomainName(ref);
  const d = auth.domains.find((x) => x.id === ref || (name !== null && x.name === name));
  if (!d || (isRestricted(auth) && !auth.key.domainIds.includes(d.id))) {
    throw new ApiError('unknown_domain', `Domain "${ref}" is not one this key may read`);
  }
  return d;
}

export const metricsHandlers: Handlers = {
  'GET /metrics': async (ctx) => {
    const q = routeQuery<MetricsQuery>(ctx);
    if (q.key !== undefined && q.facet === undefined) throw validationError('query.key requires query.facet');
    const auth = ctx.state.auth;
    const domain = resolveDomain(auth, q.domain);
    const report = await metricsReport(ctx.deps.sql, {
      orgId: auth.org.id,
      domain,
      days: q.days,
      facet: q.facet,
      key: q.key,
    });
    const { series, by } = report;

    if (q.format === 'csv') {
      const scope = domain ? domain.name : 'organization';
      const name = `metrics-${scope}-${q.days}d${q.facet ? `-${q.facet}` : ''}.csv`;
      ctx.type = 'text/csv; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="${name}"`);
      ctx.body = by
        ? csvText([
            ['key', 'label', ...FACET_FIELDS.map(([api]) => api)],
            ...by.map((r) => [r.key as string, r.label as string, ...FACET_FIELDS.map(([api]) => r[api] as number)]),
          ])
        : csvText([
            ['day', ...SERIES_FIELDS.map(([api]) => api)],
            ...series.map((r) => [r.day, ...SERIES_FIELDS.map(([api]) => r[api]!)]),
          ]);
      return;
    }
    ctx.body = report;
  },
};
