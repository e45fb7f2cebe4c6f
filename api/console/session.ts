// Console sign-in state: a random session id in an HttpOnly cookie scoped to /console, only its
// SHA-256 in Postgres, a 12 h sliding expiry, and a synchronizer CSRF token per session that
// every POST form carries. POSTs from another origin are refused before anything else.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../shared/config.js';
import { deleteExpiredSessions, insertSession, touchSession, type SessionRow } from '../../shared/db/users.js';
import { ApiError } from '../../shared/errors.js';
import type { ApiContext } from '../types.js';

export const SESSION_COOKIE = 'console_session';
export const SESSION_TTL_SECONDS = 12 * 3600;
const COOKIE_PATH = '/console';

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

function cookie(config: Config, value: string, maxAge?: number): string {
  const parts = [`${SESSION_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Lax'];
  if (maxAge !== undefined) parts.push(`Max-Age=${maxAge}`);
  // From BASE_URL rather than the request: behind a TLS-terminating proxy the hop is plain HTTP.
  if (config.baseUrl.startsWith('https:')) parts.push('Secure');
  return parts.join('; ');
}

/** The id hash of the request's session cookie, if it carries a well-formed one. */
export function sessionIdHash(ctx: ApiContext): string | null {
  const raw = ctx.cookies.get(SESSION_COOKIE);
  return raw && /^[A-Za-z0-9_-]{43}$/.test(raw) ? hashId(raw) : null;
}

export async function loadSession(ctx: ApiContext): Promise<SessionRow | null> {
  const idHash = sessionIdHash(ctx);
  return idHash ? await touchSession(ctx.deps.sql, idHash, SESSION_TTL_SECONDS) : null;
}

/** Starts a fresh session (never reusing an id the browser brought: no fixation). */
export async function startSession(ctx: ApiContext, userId: string): Promise<void> {
  const { sql, config } = ctx.deps;
  const id = randomBytes(32).toString('base64url');
  await insertSession(sql, {
    idHash: hashId(id),
    userId,
    csrfToken: randomBytes(32).toString('base64url'),
    ttlSeconds: SESSION_TTL_SECONDS,
    ip: ctx.ip || null,
    userAgent: ctx.get('user-agent').slice(0, 500) || null,
  });
  ctx.set('Set-Cookie', cookie(config, id));
  deleteExpiredSessions(sql).catch((err: unknown) => {
    ctx.state.log.warn({ event: 'CONSOLE_SESSION_SWEEP_FAILED', err }, 'could not delete expired console sessions');
  });
}

export function clearSessionCookie(ctx: ApiContext): void {
  ctx.set('Set-Cookie', cookie(ctx.deps.config, '', 0));
}

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function checkCsrf(session: SessionRow, form: URLSearchParams): void {
  const given = form.get('_csrf') ?? '';
  if (!sameString(given, session.csrf_token)) {
    throw new ApiError(
      'forbidden',
      'The form has expired or did not come from this console; reload the page and try again',
    );
  }
}

/**
 * Browsers send Origin on every cross-site POST: one that names another site is refused (this
 * also covers the login form, which has no session to tie a token to yet).
 */
export function checkOrigin(ctx: ApiContext): void {
  const origin = ctx.get('origin');
  // No header: an old browser or a script; the session's CSRF token still guards those posts.
  if (!origin) return;
  // The site itself, as the request reached us or as BASE_URL names it (behind a proxy).
  const allowed = new Set([`${ctx.protocol}://${ctx.host}`, new URL(ctx.deps.config.baseUrl).origin]);
  if (!allowed.has(origin)) throw new ApiError('forbidden', 'Cross-site form posts are not accepted');
}
