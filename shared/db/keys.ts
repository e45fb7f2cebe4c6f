// API keys and their tokens.
import { newId } from '../ids.js';
import type { Mode, Permission } from '../keys.js';
import type { Db } from './pool.js';

export interface KeyRow {
  id: string;
  org_id: string;
  name: string;
  mode: Mode;
  permission: Permission;
  domain_ids: string[];
  created_by: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  /** Prefix of the newest token. */
  token_prefix: string;
}

export interface NewKey {
  orgId: string;
  name: string;
  mode: Mode;
  permission: Permission;
  domainIds: string[];
  createdBy: string | null;
  tokenPrefix: string;
  tokenHash: string;
}

export async function insertKey(db: Db, k: NewKey): Promise<KeyRow> {
  const id = newId('key');
  const [row] = await db<Omit<KeyRow, 'token_prefix'>[]>`
    insert into api_keys (id, org_id, name, mode, permission, domain_ids, created_by)
    values (${id}, ${k.orgId}, ${k.name}, ${k.mode}, ${k.permission}, ${k.domainIds}, ${k.createdBy})
    returning *`;
  await db`
    insert into api_key_tokens (id, key_id, token_prefix, token_hash)
    values (${newId('tok')}, ${id}, ${k.tokenPrefix}, ${k.tokenHash})`;
  return { ...row!, token_prefix: k.tokenPrefix };
}

const KEY_COLUMNS = `k.*, (select t.token_prefix from api_key_tokens t where t.key_id = k.id
  order by t.created_at desc, t.id desc limit 1) as token_prefix`;

export async function getKey(db: Db, orgId: string, id: string): Promise<KeyRow | null> {
  const [row] = await db<KeyRow[]>`
    select ${db.unsafe(KEY_COLUMNS)} from api_keys k where k.org_id = ${orgId} and k.id = ${id}`;
  return row ?? null;
}

/** A key by id alone, whatever its organization (operator tools: `tern key revoke`). */
export async function findKeyById(db: Db, id: string): Promise<KeyRow | null> {
  const [row] = await db<KeyRow[]>`select ${db.unsafe(KEY_COLUMNS)} from api_keys k where k.id = ${id}`;
  return row ?? null;
}

export interface Page {
  limit: number;
  after?: string | undefined;
  before?: string | undefined;
}

/** Newest first; `after`/`before` are ids (ids sort by creation time). Fetches limit + 1. */
export async function listKeys(db: Db, orgId: string, page: Page): Promise<KeyRow[]> {
  if (page.before) {
    const rows = await db<KeyRow[]>`
      select ${db.unsafe(KEY_COLUMNS)} from api_keys k
      where k.org_id = ${orgId} and k.id > ${page.before}
      order by k.id asc limit ${page.limit + 1}`;
    // Nearest rows first in ascending order: keep the extra (has_more) row last after reversing.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<KeyRow[]>`
    select ${db.unsafe(KEY_COLUMNS)} from api_keys k
    where k.org_id = ${orgId} ${page.after ? db`and k.id < ${page.after}` : db``}
    order by k.id desc limit ${page.limit + 1}`;
}

export async function revokeKey(db: Db, orgId: string, id: string): Promise<KeyRow | null> {
  const [row] = await db<{ id: string }[]>`
    update api_keys set revoked_at = coalesce(revoked_at, now())
    where org_id = ${orgId} and id = ${id} returning id`;
  return row ? await getKey(db, orgId, id) : null;
}

/**
 * Adds a new token to the key and makes the older ones expire after `graceSeconds` (or keeps an
 * earlier expiry). Returns the old tokens' expiry.
 */
export async function rotateKeyToken(
  db: Db,
  keyId: string,
  token: { prefix: string; hash: string },
  graceSeconds: number,
): Promise<Date> {
  const [row] = await db<{ expires_at: Date }[]>`
    select now() + make_interval(secs => ${graceSeconds}) as expires_at`;
  const expiresAt = row!.expires_at;
  await db`
    update api_key_tokens set expires_at = ${expiresAt}
    where key_id = ${keyId} and (expires_at is null or expires_at > ${expiresAt})`;
  // Tokens that are already past their grace period are dead weight.
  await db`delete from api_key_tokens where key_id = ${keyId} and expires_at < now() - interval '1 day'`;
  await db`
    insert into api_key_tokens (id, key_id, token_prefix, token_hash)
    values (${newId('tok')}, ${keyId}, ${token.prefix}, ${token.hash})`;
  return expiresAt;
}

export async function touchKey(db: Db, keyId: string): Promise<void> {
  await db`update api_keys set last_used_at = now() where id = ${keyId}`;
}

/** Everything authorization needs about a token, in one round trip. */
export interface TokenAuthRow {
  key_id: string;
  org_id: string;
  name: string;
  mode: Mode;
  permission: Permission;
  domain_ids: string[];
  revoked_at: Date | null;
  token_expires_at: Date | null;
  org_sending_paused: boolean;
  org_sending_paused_reason: string | null;
  org_rate_limit_per_second: number;
  org_rate_limit_burst: number;
  org_domains: { id: string; name: string; status: string; demo: boolean }[];
}

export async function findTokenAuth(db: Db, tokenHash: string): Promise<TokenAuthRow | null> {
  const [row] = await db<TokenAuthRow[]>`
    select k.id as key_id, k.org_id, k.name, k.mode, k.permission, k.domain_ids, k.revoked_at,
           t.expires_at as token_expires_at,
           o.sending_paused as org_sending_paused,
           o.sending_paused_reason as org_sending_paused_reason,
           o.rate_limit_per_second as org_rate_limit_per_second,
           o.rate_limit_burst as org_rate_limit_burst,
           coalesce((select json_agg(json_build_object('id', d.id, 'name', d.name, 'status', d.status, 'demo', d.demo)
                                     order by d.name)
                     from domains d where d.org_id = k.org_id), '[]') as org_domains
    from api_key_tokens t
    join api_keys k on k.id = t.key_id
    join organizations o on o.id = k.org_id
    where t.token_hash = ${tokenHash}`;
  return row ?? null;
}
