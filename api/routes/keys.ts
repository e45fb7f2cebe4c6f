// API keys (DESIGN §3): identity (GET /keys/me) and management (ADMIN, live).
import { allowedDomains, isRestricted, type AuthContext } from '../../shared/auth.js';
import { getKey, listKeys, revokeKey, rotateKeyToken, type KeyRow } from '../../shared/db/keys.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { mintKey, mintToken, permits, type Permission } from '../../shared/keys.js';
import { RESEND_PERMISSIONS, type CreateKeyBody, type RotateKeyBody } from '../schemas/keys.js';
import type { Handlers } from '../types.js';
import { listEnvelope, type Pagination } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

function domainNames(auth: AuthContext, ids: string[]): string[] {
  return auth.domains.filter((d) => ids.includes(d.id)).map((d) => d.name);
}

function render(auth: AuthContext, k: KeyRow) {
  return {
    object: 'api_key',
    id: k.id,
    name: k.name,
    permission: k.permission,
    mode: k.mode,
    domains: domainNames(auth, k.domain_ids),
    token_prefix: k.token_prefix,
    created_at: k.created_at.toISOString(),
    last_used_at: k.last_used_at?.toISOString() ?? null,
    revoked_at: k.revoked_at?.toISOString() ?? null,
  };
}

/** Resolves requested domains (names or ids) against the org and the caller's own restriction. */
function resolveDomains(auth: AuthContext, refs: string[], field: string): string[] {
  const ids: string[] = [];
  for (const ref of refs) {
    const d = auth.domains.find((x) => x.id === ref || x.name === ref.toLowerCase());
    if (!d) throw validationError(`${field}: "${ref}" is not a domain of this organization`);
    ids.push(d.id);
  }
  // A key never hands out more than it has: a restricted caller mints only within its domains.
  if (isRestricted(auth)) {
    if (ids.length === 0) {
      throw new ApiError(
        'forbidden_domain',
        'A domain-restricted key can only mint keys restricted to its own domains',
      );
    }
    const outside = ids.find((id) => !auth.key.domainIds.includes(id));
    if (outside) throw new ApiError('forbidden_domain', 'A domain-restricted key cannot grant other domains');
  }
  return ids;
}

/**
 * A domain-restricted key acts only on keys restricted within its own domains: rotating an
 * unrestricted key would hand it that key's token, and with it every domain of the org.
 */
function requireWithinScope(auth: AuthContext, k: KeyRow, action: string): void {
  if (!isRestricted(auth)) return;
  if (k.domain_ids.length === 0 || k.domain_ids.some((id) => !auth.key.domainIds.includes(id))) {
    throw new ApiError(
      'forbidden_domain',
      `A domain-restricted key can only ${action} keys restricted to its own domains`,
    );
  }
}

export const keyHandlers: Handlers = {
  'GET /keys/me': async (ctx) => {
    const { key } = ctx.state.auth;
    ctx.body = {
      id: key.id,
      name: key.name,
      mode: key.mode,
      permission: key.permission,
      domains: allowedDomains(ctx.state.auth).map((d) => d.name),
    };
  },

  'POST /keys': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateKeyBody>(ctx);
    const permission =
      body.permission in RESEND_PERMISSIONS
        ? RESEND_PERMISSIONS[body.permission as 'full_access']
        : (body.permission as Permission);
    if (permission === 'ADMIN') {
      throw new ApiError('forbidden', 'ADMIN keys are minted in the console, not through the API');
    }
    if (!permits(auth.key.permission, permission)) {
      throw new ApiError('forbidden', `A ${auth.key.permission} key cannot mint a ${permission} key`);
    }
    if (body.domain_id !== undefined && body.domains !== undefined) {
      throw validationError('body.domain_id cannot be combined with body.domains');
    }
    const domainIds =
      body.domain_id === undefined
        ? resolveDomains(auth, body.domains ?? [], 'body.domains')
        : resolveDomains(auth, [body.domain_id], 'body.domain_id');
    const { key, token } = await mintKey(ctx.deps.sql, ctx.deps.config.brand, {
      orgId: auth.org.id,
      name: body.name,
      mode: body.mode,
      permission,
      domainIds,
      createdBy: auth.key.id,
    });
    ctx.status = 201;
    ctx.body = {
      object: 'api_key',
      id: key.id,
      token,
      name: key.name,
      permission: key.permission,
      mode: key.mode,
      domains: domainNames(auth, key.domain_ids),
      token_prefix: key.token_prefix,
      created_at: key.created_at.toISOString(),
    };
  },

  'GET /keys': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<Pagination>(ctx);
    const rows = await listKeys(ctx.deps.sql, auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, (k) => render(auth, k));
  },

  'GET /keys/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const key = await getKey(ctx.deps.sql, auth.org.id, ctx.params.id!);
    if (!key) throw notFound('API key');
    ctx.body = render(auth, key);
  },

  'DELETE /keys/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const target = await getKey(ctx.deps.sql, auth.org.id, ctx.params.id!);
    if (!target) throw notFound('API key');
    requireWithinScope(auth, target, 'revoke');
    const key = await revokeKey(ctx.deps.sql, auth.org.id, target.id);
    if (!key) throw notFound('API key');
    await ctx.deps.auth.invalidateKey(key.id);
    ctx.body = { ...render(auth, key), deleted: true };
  },

  'POST /keys/:id/rotate': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<RotateKeyBody>(ctx);
    const { sql, config } = ctx.deps;
    const key = await getKey(sql, auth.org.id, ctx.params.id!);
    if (!key) throw notFound('API key');
    if (key.permission === 'ADMIN') {
      throw new ApiError('forbidden', 'ADMIN keys are rotated in the console, not through the API');
    }
    requireWithinScope(auth, key, 'rotate');
    if (key.revoked_at) throw new ApiError('invalid_state', 'A revoked key cannot be rotated');
    const t = mintToken(config.brand, key.mode);
    const expiresAt = await sql.begin((tx) => rotateKeyToken(tx, key.id, t, body.expires_in));
    await ctx.deps.auth.invalidateKey(key.id);
    ctx.body = {
      ...render(auth, { ...key, token_prefix: t.prefix }),
      token: t.token,
      previous_token_expires_at: expiresAt.toISOString(),
    };
  },
};
