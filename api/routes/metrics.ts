// GET /metrics (SPEC): daily counters for the organization or one domain, with an optional
// facet breakdown, as JSON or CSV. Reads rollup rows only (shared/db/metrics.ts), so the cost
// does not grow with mail volume.
import { isRestricted, type AuthContext, type AuthDomain } from '../../shared/auth.js';
import { keyNames, readFacet, readSeries, templateNames, type Facet, type FacetRow } from '../../shared/db/metrics.js';
import type { Sql } from '../../shared/db/pool.js';
import { ApiError, validationError } from '../../shared/errors.js';
import { providerLabel } from '../../shared/mail/providers.js';
import { normalizeDomainName } from '../../shared/mail/domain-name.js';
import { FACET_FIELDS, ratesOf, SERIES_FIELDS, zeroCounts, type Counts } from '../../shared/metrics/counters.js';
import { toCsv } from '../../shared/metrics/csv.js';
import { metricsQuerySchema, type MetricsQuery } from '../schemas/metrics.js';
import type { Handlers } from '../types.js';
import { queryValidator } from '../validate.js';

const validateQuery = queryValidator<MetricsQuery>(metricsQuerySchema);

const DAY_MS = 86_400_000;

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

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

function pick(c: Counts, fields: typeof SERIES_FIELDS | typeof FACET_FIELDS): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [api, col] of fields) out[api] = c[col];
  return out;
}

const NONE_KEY = 'none';

async function labelsFor(sql: Sql, orgId: string, facet: Facet, rows: FacetRow[]): Promise<Map<string, string>> {
  const keys = rows.map((r) => r.facet_key).filter((k) => k !== '');
  const names =
    facet === 'key'
      ? await keyNames(sql, orgId, keys)
      : facet === 'template'
        ? await templateNames(sql, orgId, keys)
        : new Map<string, string>();
  const labels = new Map<string, string>();
  for (const k of keys) {
    if (facet === 'provider') labels.set(k, providerLabel(k));
    else if (facet === 'kind') labels.set(k, k);
    else labels.set(k, names.get(k) ?? k);
  }
  const none = { provider: 'Unknown', key: 'No key', template: 'No template', kind: 'No kind' }[facet];
  labels.set('', none);
  return labels;
}

export const metricsHandlers: Handlers = {
  'GET /metrics': async (ctx) => {
    const q = validateQuery(ctx.query);
    if (q.key !== undefined && q.facet === undefined) throw validationError('query.key requires query.facet');
    const auth = ctx.state.auth;
    const domain = resolveDomain(auth, q.domain);
    const { sql } = ctx.deps;
    const now = Date.now();
    const to = utcDay(now);
    const from = utcDay(now - (q.days - 1) * DAY_MS);
    const domainKey = domain?.id ?? '';

    const stored = new Map((await readSeries(sql, auth.org.id, domainKey, from, to)).map((r) => [r.day, r]));
    const totals = zeroCounts();
    const series: ({ day: string } & Record<string, number | string>)[] = [];
    for (let i = q.days - 1; i >= 0; i--) {
      const day = utcDay(now - i * DAY_MS);
      const row = stored.get(day) ?? { ...zeroCounts(), day };
      for (const [, col] of FACET_FIELDS) totals[col] += row[col];
      series.push({ day, ...pick(row, SERIES_FIELDS) });
    }

    let by: Record<string, unknown>[] | undefined;
    if (q.facet) {
      const facetKey = q.key === undefined ? null : q.key === NONE_KEY ? '' : q.key;
      const rows = await readFacet(sql, auth.org.id, domainKey, q.facet, from, to, facetKey);
      const labels = await labelsFor(sql, auth.org.id, q.facet, rows);
      by = rows.map((r) => ({
        key: r.facet_key === '' ? NONE_KEY : r.facet_key,
        label: labels.get(r.facet_key) ?? r.facet_key,
        ...pick(r, FACET_FIELDS),
      }));
    }

    if (q.format === 'csv') {
      const scope = domain ? domain.name : 'organization';
      const name = `metrics-${scope}-${q.days}d${q.facet ? `-${q.facet}` : ''}.csv`;
      ctx.type = 'text/csv; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="${name}"`);
      ctx.body = by
        ? toCsv(
            ['key', 'label', ...FACET_FIELDS.map(([api]) => api)],
            by.map((r) => [r.key as string, r.label as string, ...FACET_FIELDS.map(([api]) => r[api] as number)]),
          )
        : toCsv(
            ['day', ...SERIES_FIELDS.map(([api]) => api)],
            series.map((r) => [r.day, ...SERIES_FIELDS.map(([api]) => r[api]!)]),
          );
      return;
    }
    ctx.body = {
      object: 'metrics',
      days: q.days,
      domain: domain ? domain.name : null,
      series,
      totals: pick(totals, SERIES_FIELDS),
      rates: ratesOf(totals),
      ...(q.facet ? { facet: q.facet, by } : {}),
    };
  },
};
