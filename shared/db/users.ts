// Console users (DESIGN §3) and their sessions. Inserting a user lives in orgs.ts (with the
// organization it bootstraps); the console adds members through the same function.
import type { Db } from './pool.js';
import type { UserRow } from './orgs.js';

export interface UserWithHash extends UserRow {
  password_hash: string;
}

export async function findUserByEmail(db: Db, email: string): Promise<UserWithHash | null> {
  const [row] = await db<UserWithHash[]>`
    select id, org_id, email, role, created_at, password_hash from users where lower(email) = lower(${email})`;
  return row ?? null;
}

export async function getUserWithHash(db: Db, id: string): Promise<UserWithHash | null> {
  const [row] = await db<UserWithHash[]>`
    select id, org_id, email, role, created_at, password_hash from users where id = ${id}`;
  return row ?? null;
}

export async function listOrgUsers(db: Db, orgId: string): Promise<UserRow[]> {
  return await db<UserRow[]>`
    select id, org_id, email, role, created_at from users where org_id = ${orgId} order by created_at, id`;
}

export async function updateUserPassword(db: Db, id: string, passwordHash: string): Promise<void> {
  await db`update users set password_hash = ${passwordHash} where id = ${id}`;
}

export interface NewSession {
  idHash: string;
  userId: string;
  csrfToken: string;
  ttlSeconds: number;
  ip: string | null;
  userAgent: string | null;
}

export async function insertSession(db: Db, s: NewSession): Promise<void> {
  await db`
    insert into console_sessions (id_hash, user_id, csrf_token, expires_at, ip, user_agent)
    values (${s.idHash}, ${s.userId}, ${s.csrfToken}, now() + make_interval(secs => ${s.ttlSeconds}),
            ${s.ip}, ${s.userAgent})`;
}

/** A live session with its user and organization, as the console pages need them. */
export interface SessionRow {
  id_hash: string;
  csrf_token: string;
  user_id: string;
  email: string;
  role: 'member' | 'admin';
  org_id: string;
  org_name: string;
  sending_paused: boolean;
  sending_paused_reason: string | null;
}

/**
 * Finds a session that has not expired and slides its expiry, in one round trip (console traffic
 * is a few people clicking, so a row write per page is cheap).
 */
export async function touchSession(db: Db, idHash: string, ttlSeconds: number): Promise<SessionRow | null> {
  const [row] = await db<SessionRow[]>`
    with s as (
      update console_sessions
      set last_seen_at = now(), expires_at = now() + make_interval(secs => ${ttlSeconds})
      where id_hash = ${idHash} and expires_at > now()
      returning id_hash, csrf_token, user_id
    )
    select s.id_hash, s.csrf_token, s.user_id, u.email, u.role, u.org_id, o.name as org_name,
           o.sending_paused, o.sending_paused_reason
    from s join users u on u.id = s.user_id join organizations o on o.id = u.org_id`;
  return row ?? null;
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db`delete from console_sessions where id_hash = ${idHash}`;
}

/** Ends every other session of a user (after a password change). */
export async function deleteOtherSessions(db: Db, userId: string, keepIdHash: string): Promise<number> {
  const rows = await db`delete from console_sessions where user_id = ${userId} and id_hash <> ${keepIdHash}`;
  return rows.count;
}

/** Housekeeping on login: expired rows are never read again. */
export async function deleteExpiredSessions(db: Db, limit = 1000): Promise<number> {
  const rows = await db`
    delete from console_sessions where id_hash in (
      select id_hash from console_sessions where expires_at < now() limit ${limit})`;
  return rows.count;
}
