// Suppressions (DESIGN §5, SPEC "Domain restriction"). A domain-restricted key must name one of
// its domains when it adds a row; it sees its domains' rows and the org-wide rows (they block its
// sends too) and deletes only its domains' rows. Anything outside that scope is 404.
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
import {
  createSuppressionSchema,
  listSuppressionsQuerySchema,
  suppressionRefQuerySchema,
  type CreateSuppressionBody,
  type ListSuppressionsQuery,
  type SuppressionRefQuery,
} from '../schemas/suppressions.js';
import type { Handlers } from '../types.js';
import { bodyValidator, listEnvelope, queryValidator } from '../validate.js';

const validateCreate = bodyValidator<CreateSuppressionBody>(createSuppressionSchema);
const validateList = queryValidator<ListSuppressionsQuery>(listSuppressionsQuerySchema);
const validateRef = queryValidator<SuppressionRefQuery>(suppressionRefQuerySchema);

function render(auth: AuthContext, s: SuppressionRow) {
  return {
    object: 'suppression',
    id: s.id,
    email: s.email,
    domain: s.domain_id === null ? null : (auth.domains.find((d) => d.id === s.domain_id)?.name ?? null),
    reason: s.reason,
    source_email_id: s.source_email_id,
    created_at: s.created_at.toISOString(),
  };
}

/** Rows the key may read (`delete` false) or delete (`delete` true). */
function scopeOf(auth: AuthContext, forDelete: boolean): SuppressionScope {
  if (!isRestricted(auth)) return { domainIds: null, orgWide: true };
  return { domainIds: auth.key.domainIds, orgWide: !forDelete };
}

/** A domain named by name or id: a restricted key only its own (403), others any of the org (422). */
function resolveDomain(auth: AuthContext, ref: string, field: string): AuthDomain {
  const d = auth.domains.find((x) => x.id === ref || x.name === ref.toLowerCase());
  if (isRestricted(auth) && (!d || !auth.key.domainIds.includes(d.id))) {
    throw new ApiError('forbidden_domain', `${field}: "${ref}" is not one of this key's domains`);
  }
  if (!d) throw validationError(`${field}: "${ref}" is not a domain of this organization`);
  return d;
}

export const suppressionHandlers: Handlers = {
  'POST /suppressions': async (ctx) => {
    const auth = ctx.state.auth;
    const body = validateCreate(ctx.state.body);
    if (body.domain === undefined && isRestricted(auth)) {
      throw new ApiError(
        'forbidden_domain',
        'A domain-restricted key must pass domain (one of its domains) when it adds a suppression',
      );
    }
    const domain = body.domain === undefined ? null : resolveDomain(auth, body.domain, 'body.domain');
    const { row, created } = await addOrGetSuppression(ctx.deps.sql, {
      orgId: auth.org.id,
      email: body.email,
      domainId: domain?.id ?? null,
      reason: 'manual',
      sourceEmailId: null,
    });
    ctx.status = created ? 201 : 200;
    ctx.body = render(auth, row);
  },

  'GET /suppressions': async (ctx) => {
    const auth = ctx.state.auth;
    const q = validateList(ctx.query);
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const rows = await listSuppressions(
      ctx.deps.sql,
      auth.org.id,
      scopeOf(auth, false),
      { email: q.email, reason: q.reason, domainId },
      q,
    );
    ctx.body = listEnvelope(rows, q.limit, (s) => render(auth, s));
  },

  'GET /suppressions/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const q = validateRef(ctx.query);
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const [row] = await findSuppressionsByRef(
      ctx.deps.sql,
      auth.org.id,
      ctx.params.id!,
      scopeOf(auth, false),
      domainId,
    );
    if (!row) throw notFound('Suppression');
    ctx.body = render(auth, row);
  },

  // By address, every row of it the key may delete goes (org-wide and per domain), unless
  // `domain` names one: "unsuppress this address" is what a caller means.
  'DELETE /suppressions/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const q = validateRef(ctx.query);
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
      deleted: true,
      deleted_ids: deleted.map((r) => r.id),
    };
  },
};
