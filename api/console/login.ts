// Sign-in and sign-out. Every attempt, failed or not, spends a token of two Redis buckets: the
// client IP's, and either the email's (a browser unknown to the account) or the browser's own
// (a device cookie from an earlier sign-in with that email: ./device.ts). So a guess at one
// account from many addresses is slowed by the email's bucket, while its owner, signing in from
// a browser they used before, is not locked out by it. An unknown email costs the same scrypt
// as a wrong password, so neither timing nor the answer tells whether an account exists. A
// successful sign-in fills the bucket it spent again: the right password ends a guess at the
// account, and someone who signs in often is not locked out by their own sign-ins.
import { deleteSession, findUserByEmail, getTotpState } from '../../shared/db/users.js';
import { ApiError } from '../../shared/errors.js';
import { hashPassword, verifyPassword } from '../../shared/passwords.js';
import { RateLimiter, type Bucket } from '../../shared/rate-limit.js';
import type { ApiContext, AppDeps } from '../types.js';
import { html } from './html.js';
import { rememberDevice, trustedDevice } from './device.js';
import { redirect, show, type ConsoleRequest } from './respond.js';
import { clearSessionCookie, loadSession, sessionIdHash, startSession } from './session.js';
import { askForCode } from './totp.js';

/** 20 attempts, then one every 30 s, per IP. */
const IP_BUCKET: Bucket = { perSecond: 1 / 30, burst: 20 };
/**
 * 10 attempts, then one every 2 min, per email from browsers unknown to it (slows a distributed
 * guess at one account), and per device cookie from a known one.
 */
export const EMAIL_BUCKET: Bucket = { perSecond: 1 / 120, burst: 10 };

const limiters = new WeakMap<AppDeps, RateLimiter>();

function limiter(deps: AppDeps): RateLimiter {
  let l = limiters.get(deps);
  if (!l) limiters.set(deps, (l = new RateLimiter(deps.redis, deps.redisKeys.consoleLogin)));
  return l;
}

let dummyHash: Promise<string> | null = null;

/** Spends one token of each bucket; 429 when any is empty. */
export async function throttle(ctx: ApiContext, buckets: [subject: string, bucket: Bucket][]): Promise<void> {
  const l = limiter(ctx.deps);
  const results = await Promise.all(buckets.map(([subject, bucket]) => l.take(subject, bucket)));
  if (results.every((r) => r.allowed)) return;
  const wait = Math.max(...results.map((r) => r.retryAfterSeconds));
  ctx.state.log.warn({ event: 'CONSOLE_LOGIN_THROTTLED', ip: ctx.ip }, 'console password attempts throttled');
  throw new ApiError('rate_limited', `Too many attempts; try again in ${wait} seconds`, {
    'Retry-After': String(wait),
  });
}

function loginForm(ctx: ApiContext, status: number, message: string | null, email = ''): void {
  show(ctx, null, {
    title: 'Sign in',
    status,
    body: html`${message ? html`<p class="banner warn" data-error="login">${message}</p>` : ''}
      <form method="post" action="/console/login" class="stack">
        <label for="email">Email</label
        ><input type="email" id="email" name="email" value="${email}" required autofocus autocomplete="username" />
        <label for="password">Password</label
        ><input type="password" id="password" name="password" required autocomplete="current-password" />
        <p><button type="submit">Sign in</button></p>
      </form>`,
  });
}

export async function loginPage(ctx: ApiContext): Promise<void> {
  if (await loadSession(ctx)) return redirect(ctx, '/console');
  loginForm(ctx, 200, null);
}

export async function login(ctx: ApiContext, form: URLSearchParams): Promise<void> {
  const email = (form.get('email') ?? '').trim().slice(0, 320);
  const password = form.get('password') ?? '';
  if (!email || !password) return loginForm(ctx, 422, 'Enter your email and password.', email);
  const device = trustedDevice(ctx, email);
  const account = device ? `device:${device}` : `email:${email.toLowerCase()}`;
  await throttle(ctx, [
    [`ip:${ctx.ip}`, IP_BUCKET],
    [account, EMAIL_BUCKET],
  ]);
  const user = await findUserByEmail(ctx.deps.sql, email);
  const ok = await verifyPassword(
    password.slice(0, 1024),
    user?.password_hash ?? (await (dummyHash ??= hashPassword('x'))),
  );
  if (!user || !ok) {
    ctx.state.log.info({ event: 'CONSOLE_LOGIN_FAILED', ip: ctx.ip }, 'console sign-in failed');
    return loginForm(ctx, 401, 'Email or password is wrong.', email);
  }
  // A session the browser already had ends here: one sign-in, one fresh id.
  const old = sessionIdHash(ctx);
  if (old) await deleteSession(ctx.deps.sql, old);
  await limiter(ctx.deps)
    .reset(account)
    .catch(() => {});
  // With a second factor, the session starts once its code is given (./totp.ts).
  if ((await getTotpState(ctx.deps.sql, user.id))?.totp_secret) {
    clearSessionCookie(ctx);
    rememberDevice(ctx, email, device);
    return askForCode(ctx, user.id);
  }
  await startSession(ctx, user.id);
  rememberDevice(ctx, email, device);
  ctx.state.log.info({ event: 'CONSOLE_LOGIN', userId: user.id }, 'console sign-in');
  redirect(ctx, '/console');
}

export async function logout(ctx: ApiContext, req: ConsoleRequest): Promise<void> {
  await deleteSession(ctx.deps.sql, req.session.id_hash);
  clearSessionCookie(ctx);
  redirect(ctx, '/console/login');
}
