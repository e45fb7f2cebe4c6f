// Sending domains (DESIGN §5; ADMIN, live keys): add (DKIM key + records), list, read, tracking
// overrides, DNS verification, delete. Every change that can alter a key's allowed domains drops
// the org's cached auth contexts, since GET /keys/me and the send checks read them.
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import {
  countUnfinishedDomainEmails,
  deleteDomain,
  getOrgDomain,
  listDomainsPage,
  updateDomainTracking,
  type DomainRow,
} from '../../shared/db/domains.js';
import type { DomainRecord } from '../../shared/domains/records.js';
import { DomainSetupError, provisionDomain } from '../../shared/domains/setup.js';
import { checkDomain } from '../../shared/domains/check.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { normalizeDomainName } from '../../shared/mail/domain-name.js';
import {
  createDomainSchema,
  listDomainsQuerySchema,
  updateDomainSchema,
  type CreateDomainBody,
  type UpdateDomainBody,
} from '../schemas/domains.js';
import type { ApiContext, Handlers } from '../types.js';
import { bodyValidator, listEnvelope, queryValidator, type Pagination } from '../validate.js';

const validateCreate = bodyValidator<CreateDomainBody>(createDomainSchema);
const validateUpdate = bodyValidator<UpdateDomainBody>(updateDomainSchema);
const validateList = queryValidator<Pagination>(listDomainsQuerySchema);

export function renderDomain(d: DomainRow) {
  return {
    object: 'domain',
    id: d.id,
    name: d.name,
    status: d.status,
    created_at: d.created_at.toISOString(),
    verified_at: d.verified_at?.toISOString() ?? null,
    last_checked_at: d.last_checked_at?.toISOString() ?? null,
    open_tracking: d.track_opens,
    click_tracking: d.track_clicks,
    records: d.records as DomainRecord[],
  };
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
    const body = validateCreate(ctx.state.body);
    const { sql, config } = ctx.deps;
    const domain = await provisionDomain(sql, config, { orgId: auth.org.id, name: body.name }).catch((err) => {
      throw setupError(err);
    });
    await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.status = 201;
    ctx.body = renderDomain(domain);
  },

  'GET /domains': async (ctx) => {
    const auth = ctx.state.auth;
    const q = validateList(ctx.query);
    const only = isRestricted(auth) ? auth.key.domainIds : null;
    const rows = await listDomainsPage(ctx.deps.sql, auth.org.id, q, only);
    ctx.body = listEnvelope(rows, q.limit, renderDomain);
  },

  'GET /domains/:id': async (ctx) => {
    ctx.body = renderDomain(await loadDomain(ctx, ctx.state.auth));
  },

  'PATCH /domains/:id': async (ctx) => {
    const body = validateUpdate(ctx.state.body);
    const d = await loadDomain(ctx, ctx.state.auth);
    const updated = await updateDomainTracking(ctx.deps.sql, d.id, {
      track_opens: body.open_tracking,
      track_clicks: body.click_tracking,
    });
    if (!updated) throw notFound('Domain');
    ctx.body = renderDomain(updated);
  },

  'POST /domains/:id/verify': async (ctx) => {
    const auth = ctx.state.auth;
    const { sql, config } = ctx.deps;
    const d = await loadDomain(ctx, auth);
    const saved = await checkDomain(sql, config, d);
    if (!saved) throw notFound('Domain');
    if (saved.status !== d.status) await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.state.log.info(
      { event: 'DOMAIN_VERIFY', domainId: d.id, domain: d.name, status: saved.status },
      'domain DNS check finished',
    );
    ctx.body = renderDomain(saved);
  },

  'DELETE /domains/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const { sql } = ctx.deps;
    const d = await loadDomain(ctx, auth);
    // Deleting cascades to the domain's messages; those not yet sent would lose their DKIM key.
    const unfinished = await countUnfinishedDomainEmails(sql, d.id);
    if (unfinished > 0) {
      throw new ApiError(
        'invalid_state',
        `${d.name} has ${unfinished} message(s) not yet sent; cancel them or wait before deleting the domain`,
      );
    }
    if (!(await deleteDomain(sql, auth.org.id, d.id))) throw notFound('Domain');
    await ctx.deps.auth.invalidateOrg(auth.org.id);
    ctx.body = { object: 'domain', id: d.id, name: d.name, deleted: true };
  },
};
