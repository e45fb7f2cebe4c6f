// Suppressions (DESIGN §5 and §16, SPEC "Domain restriction"): addresses and rules (`pattern`,
// shared/suppression-patterns.ts). A domain-restricted key must name one of its domains when it
// adds a row; it sees its domains' rows and the org-wide rows (they block its sends too) and
// deletes only its domains' rows. Anything outside that scope is 404.
import { isRestricted, type AuthContext, type AuthDomain } from '../../shared/auth.js';
import {
  addOrGetSuppression,
  deleteSuppressions,
  findSuppressionsByRef,
  listSuppressions,
  type SuppressionRow,
  type SuppressionScope,
} from '../../shared/db/suppressions.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { parseSuppressionPattern, type SuppressionPattern } from '../../shared/suppression-patterns.js';
import {
  type CreateSuppressionBody,
  type ListSuppressionsQuery,
  type SuppressionRefQuery,
} from '../schemas/suppressions.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

export function renderSuppression(auth: AuthContext, s: SuppressionRow) {
  return {
    object: 'suppression',
    id: s.id,
    email: s.email,
    pattern: s.pattern,
    domain: s.domain_id === null ? null : (auth.domains.find((d) => d.id === s.domain_id)?.name ?? null),
    reason: s.reason,
    source_email_id: s.source_email_id,
    created_at: s.created_at.toISOString(),
  };
}

/** Rows the key may read (`delete` false) or delete (`delete` true). */
export function scopeOf(auth: AuthContext, forDelete: boolean): SuppressionScope {
  if (!isRestricted(auth)) return { domainIds: null, orgWide: true };
  return { domainIds: auth.key.domainIds, orgWide: !forDelete };
}

/** A domain named by name or id: a restricted key only its own (403), others any of the org (422). */
export function resolveDomain(auth: AuthContext, ref: string, field: string): AuthDomain {
  const d = auth.domains.find((x) => x.id === ref || x.name === ref.toLowerCase());
  if (isRestricted(auth) && (!d || !auth.key.domainIds.includes(d.id))) {
    throw new ApiError('forbidden_domain', `${field}: "${ref}" is not one of this key's domains`);
  }
  if (!d) throw validationError(`${field}: "${ref}" is not a domain of this organization`);
  return d;
}

/** The body's rule, read (422 naming what is wrong), or undefined for an address. */
function patternOf(body: CreateSuppressionBody): SuppressionPattern | undefined {
  if ((body.email === undefined) === (body.pattern === undefined)) {
    throw validationError(
      'body must have exactly one of email (an address) and pattern (a rule such as *@example.com)',
    );
  }
  if (body.email?.includes('*')) {
    throw validationError('body.email contains `*`: to suppress every address it matches, pass it as pattern');
  }
  if (body.pattern === undefined) return undefined;
  const parsed = parseSuppressionPattern(body.pattern);
  if (!parsed.ok) throw validationError(`body.pattern ${parsed.reason}`);
  return parsed.value;
}

export const suppressionHandlers: Handlers = {
  'POST /suppressions': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateSuppressionBody>(ctx);
    if (body.domain === undefined && isRestricted(auth)) {
      throw new ApiError(
        'forbidden_domain',
        'A domain-restricted key must pass domain (one of its domains) when it adds a suppression',
      );
    }
    const domain = body.domain === undefined ? null : resolveDomain(auth, body.domain, 'body.domain');
    const pattern = patternOf(body);
    const { row, created } = await addOrGetSuppression(ctx.deps.sql, {
      orgId: auth.org.id,
      email: body.email ?? '',
      pattern,
      domainId: domain?.id ?? null,
      reason: 'manual',
      sourceEmailId: null,
    });
    ctx.status = created ? 201 : 200;
    ctx.body = renderSuppression(auth, row);
  },

  'GET /suppressions': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<ListSuppressionsQuery>(ctx);
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const rows = await listSuppressions(
      ctx.deps.sql,
      auth.org.id,
      scopeOf(auth, false),
      { email: q.email, pattern: q.pattern?.toLowerCase(), type: q.type, reason: q.reason, domainId },
      q,
    );
    ctx.body = listEnvelope(rows, q.limit, (s) => renderSuppression(auth, s));
  },

  'GET /suppressions/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<SuppressionRefQuery>(ctx);
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const [row] = await findSuppressionsByRef(
      ctx.deps.sql,
      auth.org.id,
      ctx.params.id!,
      scopeOf(auth, false),
      domainId,
    );
    if (!row) throw notFound('Suppression');
    ctx.body = renderSuppression(auth, row);
  },

  // By address, every row of it the key may delete goes (org-wide and per domain), unless
  // `domain` names one: "unsuppress this address" is what a caller means.
  'DELETE /suppressions/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<SuppressionRefQuery>(ctx);
    const { sql } = ctx.deps;
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const rows = await findSuppressionsByRef(sql, auth.org.id, ctx.params.id!, scopeOf(auth, true), domainId);
    if (rows.length === 0) throw notFound('Suppression');
    const deleted = await deleteSuppressions(
      sql,
      auth.org.id,
      rows.map((r) => r.id),
    );
    if (deleted.length === 0) throw notFound('Suppression');
    ctx.body = {
      object: 'suppression',
      id: deleted[0]!.id,
      email: deleted[0]!.email,
      pattern: deleted[0]!.pattern,
      deleted: true,
      deleted_ids: deleted.map((r) => r.id),
    };
  },
};
