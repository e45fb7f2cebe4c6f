// Sending domains (DESIGN §5, §16; ADMIN, live keys): add (DKIM key + records), list, read,
// tracking overrides and inbound routes, DNS verification, the DMARC report summary, delete. Every change that can alter a key's allowed domains drops
// the org's cached auth contexts, since GET /keys/me and the send checks read them.
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import {
  getOrgDomain,
  listDomainsPage,
  updateDomainInbound,
  updateDomainTracking,
  type DomainRow,
} from '../../shared/db/domains.js';
import { inboundOf, normaliseRoutes, type InboundSettings } from '../../shared/domains/inbound-routes.js';
import { withPoolSpf, withPoolSpfOne } from '../../shared/domains/pool-spf.js';
import { withInboundRecord, type DomainRecord } from '../../shared/domains/records.js';
import { removeDomain } from '../../shared/domains/remove.js';
import { DomainSetupError, provisionDomain } from '../../shared/domains/setup.js';
import { checkDomain } from '../../shared/domains/check.js';
import { dmarcReporters, dmarcSources } from '../../shared/db/dmarc.js';
import { installAddresses, normaliseIp } from '../../shared/domains/own-addresses.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { normalizeDomainName } from '../../shared/mail/domain-name.js';
import { type CreateDomainBody, type UpdateDomainBody } from '../schemas/domains.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope, type Pagination } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

export function renderDomain(d: DomainRow) {
  return {
    object: 'domain',
    id: d.id,
    name: d.name,
    status: d.status,
    /** The demo domain of `npm start`: test keys only, never leaves the machine. */
    demo: d.demo,
    created_at: d.created_at.toISOString(),
    verified_at: d.verified_at?.toISOString() ?? null,
    last_checked_at: d.last_checked_at?.toISOString() ?? null,
    open_tracking: d.track_opens,
    click_tracking: d.track_clicks,
    warmup: d.warmup,
    records: d.records as DomainRecord[],
    inbound: inboundOf(d.inbound),
  };
}

/** The stored inbound settings with the body's changes, normalised (422 naming the route). */
function mergedInbound(d: DomainRow, patch: NonNullable<UpdateDomainBody['inbound']>): InboundSettings {
  const current = inboundOf(d.inbound);
  const routes = patch.routes ? normaliseRoutes(d.name, patch.routes) : current.routes;
  if (typeof routes === 'string') throw validationError(routes);
  return { enabled: patch.enabled ?? current.enabled, routes };
}

/** The domain named by the `:id` param (id or name), within a restricted key's domains. */
async function loadDomain(ctx: ApiContext, auth: AuthContext): Promise<DomainRow> {
  const raw = ctx.params.id!;
  const ref = raw.startsWith('dom_') ? raw : (normalizeDomainName(raw) ?? raw);
  const d = await getOrgDomain(ctx.deps.sql, auth.org.id, ref);
  if (!d || (isRestricted(auth) && !auth.key.domainIds.includes(d.id))) throw notFound('Domain');
  return d;
}

function setupError(err: unknown): unknown {
  if (!(err instanceof DomainSetupError)) return err;
  if (err.kind === 'invalid_name') return validationError(`body.name: ${err.message}`);
  return new ApiError('conflict', err.message);
}

export const domainHandlers: Handlers = {
  'POST /domains': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateDomainBody>(ctx);
    const { sql, config } = ctx.deps;
    const domain = await provisionDomain(sql, config, { orgId: auth.org.id, name: body.name }).catch((err) => {
      throw setupError(err);
    });
    await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.status = 201;
    ctx.body = renderDomain(await withPoolSpfOne(sql, domain));
  },

  'GET /domains': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<Pagination>(ctx);
    const only = isRestricted(auth) ? auth.key.domainIds : null;
    const rows = await listDomainsPage(ctx.deps.sql, auth.org.id, q, only);
    ctx.body = listEnvelope(await withPoolSpf(ctx.deps.sql, rows), q.limit, renderDomain);
  },

  'GET /domains/:id': async (ctx) => {
    ctx.body = renderDomain(await withPoolSpfOne(ctx.deps.sql, await loadDomain(ctx, ctx.state.auth)));
  },

  'PATCH /domains/:id': async (ctx) => {
    const body = routeBody<UpdateDomainBody>(ctx);
    const d = await loadDomain(ctx, ctx.state.auth);
    const { sql, config } = ctx.deps;
    const inbound = body.inbound ? mergedInbound(d, body.inbound) : null;
    const updated = await sql.begin(async (tx) => {
      const row = await updateDomainTracking(tx, d.id, {
        track_opens: body.open_tracking,
        track_clicks: body.click_tracking,
        warmup: body.warmup,
      });
      if (!row || !inbound) return row;
      const records = withInboundRecord(row.records as DomainRecord[], row.name, config.mxHost, inbound.enabled);
      return await updateDomainInbound(tx, d.id, inbound, records);
    });
    if (!updated) throw notFound('Domain');
    if (body.warmup !== undefined && body.warmup !== d.warmup) {
      ctx.state.log.info(
        { event: 'DOMAIN_WARMUP_CHANGED', domainId: d.id, domain: d.name, warmup: body.warmup },
        body.warmup ? 'domain follows the warm-up ramp' : 'domain marked established: no warm-up ramp',
      );
    }
    ctx.body = renderDomain(await withPoolSpfOne(sql, updated));
  },

  'POST /domains/:id/verify': async (ctx) => {
    const auth = ctx.state.auth;
    const { sql, config } = ctx.deps;
    const d = await loadDomain(ctx, auth);
    const saved = await checkDomain(sql, config, d, ctx.deps.queues);
    if (!saved) throw notFound('Domain');
    if (saved.status !== d.status) await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.state.log.info(
      { event: 'DOMAIN_VERIFY', domainId: d.id, domain: d.name, status: saved.status },
      'domain DNS check finished',
    );
    ctx.body = renderDomain(await withPoolSpfOne(sql, saved));
  },

  'GET /domains/:id/dmarc': async (ctx) => {
    const q = routeQuery<{ days: number }>(ctx);
    const d = await loadDomain(ctx, ctx.state.auth);
    const { sql, config } = ctx.deps;
    const [sources, reporters, own] = await Promise.all([
      dmarcSources(sql, d.id, q.days),
      dmarcReporters(sql, d.id, q.days),
      installAddresses(sql, config),
    ]);
    ctx.body = {
      object: 'dmarc_summary',
      domain: d.name,
      days: q.days,
      reporters,
      sources: sources.map((s) => ({
        ip: s.ip,
        own: own.has(normaliseIp(s.ip)),
        messages: s.messages,
        spf_aligned: s.spf_aligned,
        dkim_aligned: s.dkim_aligned,
        disposition: { none: s.none, quarantine: s.quarantine, reject: s.reject },
        reporters: s.reporters,
      })),
    };
  },

  'DELETE /domains/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const { sql } = ctx.deps;
    const d = await loadDomain(ctx, auth);
    // Deleting cascades to the domain's messages; those not yet sent would lose their DKIM key.
    await removeDomain(sql, auth.org.id, d);
    await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.body = { object: 'domain', id: d.id, name: d.name, deleted: true };
  },
};
