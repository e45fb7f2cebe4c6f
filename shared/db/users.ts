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
  /** The user has a confirmed second factor. */
  totp_enabled: boolean;
  /** The organization requires a second factor of admins, and this admin has none yet. */
  must_enrol_totp: boolean;
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
           o.sending_paused, o.sending_paused_reason, u.totp_enabled_at is not null as totp_enabled,
           (o.require_admin_totp and u.role = 'admin' and u.totp_enabled_at is null) as must_enrol_totp
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

/** A user's second factor: the confirmed secret (null: none), and a secret being set up. */
export interface TotpState {
  totp_secret: string | null;
  totp_pending_secret: string | null;
  totp_last_step: string | null;
  recovery_left: number;
}

export async function getTotpState(db: Db, userId: string): Promise<TotpState | null> {
  const [row] = await db<TotpState[]>`
    select totp_secret, totp_pending_secret, totp_last_step::text,
      cardinality(totp_recovery_hashes) as recovery_left
    from users where id = ${userId}`;
  return row ?? null;
}

/** Starts (or restarts) enrolment with a new secret; the confirmed one, if any, stays in force. */
export async function setPendingTotp(db: Db, userId: string, secret: string): Promise<void> {
  await db`update users set totp_pending_secret = ${secret} where id = ${userId}`;
}

/**
 * Makes the pending secret the user's second factor, with these recovery code hashes, once a
 * code of it was checked at `step`; false when the pending secret changed meanwhile.
 */
export async function confirmTotp(
  db: Db,
  userId: string,
  secret: string,
  step: number,
  recoveryHashes: string[],
): Promise<boolean> {
  const rows = await db`
    update users set totp_secret = totp_pending_secret, totp_pending_secret = null, totp_enabled_at = now(),
      totp_last_step = ${step}, totp_recovery_hashes = ${recoveryHashes}
    where id = ${userId} and totp_pending_secret = ${secret}`;
  return rows.count === 1;
}

export async function disableTotp(db: Db, userId: string): Promise<void> {
  await db`update users set totp_secret = null, totp_pending_secret = null, totp_enabled_at = null,
    totp_last_step = null, totp_recovery_hashes = '{}' where id = ${userId}`;
}

/** Records a code's time step as used: false when that step (or a later one) was used already. */
export async function useTotpStep(db: Db, userId: string, step: number): Promise<boolean> {
  const rows = await db`
    update users set totp_last_step = ${step}
    where id = ${userId} and totp_secret is not null and (totp_last_step is null or totp_last_step < ${step})`;
  return rows.count === 1;
}

/** Spends a recovery code (by its hash): false when it is not one of the user's unused codes. */
export async function useRecoveryCode(db: Db, userId: string, hash: string): Promise<boolean> {
  const rows = await db`
    update users set totp_recovery_hashes = array_remove(totp_recovery_hashes, ${hash})
    where id = ${userId} and ${hash} = any(totp_recovery_hashes)`;
  return rows.count === 1;
}

export async function setRequireAdminTotp(db: Db, orgId: string, required: boolean): Promise<void> {
  await db`update organizations set require_admin_totp = ${required} where id = ${orgId}`;
}
