// `tern key mint|revoke|list`: API keys from the operator's side. Unlike `POST /keys`, the CLI
// may mint ADMIN keys (live only). A revoke is announced on Redis so that every running web
// process drops the key from its cache at once (the same message Authenticator.invalidateKey
// publishes).
import { findOrgDomains, listOrgDomains } from '../../../shared/db/domains.js';
import { findKeyById, listKeys, revokeKey, type KeyRow } from '../../../shared/db/keys.js';
import { getOrg } from '../../../shared/db/orgs.js';
import type { Sql } from '../../../shared/db/pool.js';
import { mintKey, MODES, PERMISSIONS, type Mode, type Permission } from '../../../shared/keys.js';
import { redisKeys } from '../../../shared/redis-keys.js';
import { CliError, splitList, UsageError, type Command } from '../command.js';

async function requireOrg(sql: Sql, orgId: string): Promise<void> {
  if (!(await getOrg(sql, orgId))) throw new CliError(`organization ${orgId} not found`);
}

/** Domain names or ids → ids, each checked to belong to the organization. */
async function resolveDomains(sql: Sql, orgId: string, refs: string[]): Promise<{ ids: string[]; names: string[] }> {
  const found = await findOrgDomains(
    sql,
    orgId,
    refs.map((r) => (r.startsWith('dom_') ? r : r.toLowerCase())),
  );
  const ids: string[] = [];
  const names: string[] = [];
  for (const ref of refs) {
    const d = found.get(ref) ?? found.get(ref.toLowerCase());
    if (!d) throw new CliError(`--domains: "${ref}" is not a domain of organization ${orgId}`);
    if (!ids.includes(d.id)) {
      ids.push(d.id);
      names.push(d.name);
    }
  }
  return { ids, names };
}

function oneOf<T extends string>(flag: string, raw: string, allowed: readonly T[]): T {
  const v = (flag === 'permission' ? raw.toUpperCase() : raw.toLowerCase()) as T;
  if (!allowed.includes(v)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return v;
}

const keyMint: Command = {
  name: 'key mint',
  summary: 'mint an API key for an organization (the token is shown once)',
  options: {
    org: { type: 'string', value: 'org_id', help: 'organization id', required: true },
    permission: { type: 'string', value: 'SEND|FULL|ADMIN', help: 'permission tier', required: true },
    mode: { type: 'string', value: 'live|test', help: 'key mode (ADMIN keys are live only)', required: true },
    domains: { type: 'string', value: 'a,b', help: 'restrict the key to these domains (names or ids)' },
    name: { type: 'string', value: 'name', help: 'a label for the key' },
    json: { type: 'boolean', help: 'print the result as JSON' },
  },
  async run(values, ctx) {
    const orgId = String(values.org).trim();
    const permission: Permission = oneOf('permission', String(values.permission), PERMISSIONS);
    const mode: Mode = oneOf('mode', String(values.mode), MODES);
    if (permission === 'ADMIN' && mode === 'test') {
      throw new UsageError('--mode test is refused for ADMIN keys: ADMIN keys are live only');
    }
    const refs = typeof values.domains === 'string' ? splitList(values.domains) : [];
    if (typeof values.domains === 'string' && refs.length === 0) {
      throw new UsageError('--domains must list at least one domain name or id');
    }
    const name = typeof values.name === 'string' ? values.name.trim() : `${permission} ${mode} key`;
    if (name.length > 100) throw new UsageError('--name must be at most 100 characters');
    const sql = ctx.sql();
    await requireOrg(sql, orgId);
    const domains = await resolveDomains(sql, orgId, refs);
    const { key, token } = await mintKey(sql, ctx.config().brand, {
      orgId,
      name,
      mode,
      permission,
      domainIds: domains.ids,
      createdBy: null,
    });
    const out = {
      key: {
        id: key.id,
        token,
        name: key.name,
        permission: key.permission,
        mode: key.mode,
        domains: domains.names,
        token_prefix: key.token_prefix,
      },
    };
    if (values.json) return ctx.json(out);
    const scope = domains.names.length > 0 ? `domains: ${domains.names.join(', ')}` : 'all domains';
    ctx.out(`Key    ${key.id}  "${key.name}"  ${permission} ${mode}, ${scope}`);
    ctx.out(`Token  ${token}`);
    ctx.out('The token is shown only now: keep it somewhere safe.');
  },
};

const keyRevoke: Command = {
  name: 'key revoke',
  summary: 'revoke an API key (running web processes drop it at once)',
  options: {
    id: { type: 'string', value: 'key_id', help: 'the key to revoke', required: true },
    json: { type: 'boolean', help: 'print the result as JSON' },
  },
  async run(values, ctx) {
    const id = String(values.id).trim();
    const sql = ctx.sql();
    const existing = await findKeyById(sql, id);
    if (!existing) throw new CliError(`key ${id} not found`);
    const revoked = (await revokeKey(sql, existing.org_id, id))!;
    const channel = redisKeys(ctx.config().redisPrefix).authInvalidate;
    try {
      const redis = await ctx.redis();
      await redis.publish(channel, `key:${id}`);
    } catch (err) {
      throw new CliError(
        `key ${id} is revoked, but the news could not be published on Redis (${(err as Error).message}): ` +
          'running web processes may accept it for up to 30 s',
      );
    }
    const out = { key: { id, org_id: revoked.org_id, revoked_at: revoked.revoked_at!.toISOString() } };
    if (values.json) return ctx.json(out);
    ctx.out(`Key ${id} revoked at ${out.key.revoked_at}.`);
  },
};

function listRow(k: KeyRow, names: Map<string, string>) {
  return {
    id: k.id,
    name: k.name,
    permission: k.permission,
    mode: k.mode,
    domains: k.domain_ids.map((d) => names.get(d) ?? d),
    token_prefix: k.token_prefix,
    created_at: k.created_at.toISOString(),
    last_used_at: k.last_used_at?.toISOString() ?? null,
    revoked_at: k.revoked_at?.toISOString() ?? null,
  };
}

const keyList: Command = {
  name: 'key list',
  summary: "list an organization's API keys (never their tokens)",
  options: {
    org: { type: 'string', value: 'org_id', help: 'organization id', required: true },
    json: { type: 'boolean', help: 'print {"data":[keys]} as JSON' },
  },
  async run(values, ctx) {
    const orgId = String(values.org).trim();
    const sql = ctx.sql();
    await requireOrg(sql, orgId);
    const names = new Map((await listOrgDomains(sql, orgId)).map((d) => [d.id, d.name]));
    const rows: KeyRow[] = [];
    for (;;) {
      const page = await listKeys(sql, orgId, { limit: 100, after: rows.at(-1)?.id });
      rows.push(...page.slice(0, 100));
      if (page.length <= 100) break;
    }
    const data = rows.map((k) => listRow(k, names));
    if (values.json) return ctx.json({ data });
    if (data.length === 0) return ctx.out('No keys.');
    for (const k of data) {
      const state = k.revoked_at ? 'revoked' : 'active';
      const scope = k.domains.length > 0 ? k.domains.join(',') : '*';
      ctx.out(
        [k.id, k.token_prefix, k.permission.padEnd(5), k.mode.padEnd(4), state.padEnd(7), scope, k.name].join('  '),
      );
    }
  },
};

export const keyCommands: Command[] = [keyMint, keyRevoke, keyList];
