// The second factor of console sign-in (DESIGN §22, shared/totp.ts): enrolment on the Account
// page (the secret as base32 text beside its QR code, confirmed by a first code, then ten
// recovery codes shown once), the second step of a password sign-in (a code or a recovery code),
// turning it off, and the organization setting that requires it of admins (Settings).
//
// Between the password and the code the browser holds a short-lived cookie naming the user and
// signed with SECRET_KEY (no session exists yet); each code tried spends the same throttle buckets
// as a password.
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  confirmTotp,
  disableTotp,
  getTotpState,
  setPendingTotp,
  setRequireAdminTotp,
  useRecoveryCode,
  useTotpStep,
  type SessionRow,
} from '../../shared/db/users.js';
import { ApiError, validationError } from '../../shared/errors.js';
import { newRecoveryCodes, newTotpSecret, qrSvg, recoveryHash, totpStep, totpUri } from '../../shared/totp.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { csrfField, html, Safe } from './html.js';
import { EMAIL_BUCKET, throttle } from './login.js';
import { redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { startSession } from './session.js';
import { card, textField } from './ui.js';

const PENDING_COOKIE = 'console_2fa';
const PENDING_SECONDS = 300;
const IP_BUCKET = { perSecond: 1 / 30, burst: 20 };

function pendingSignature(ctx: ApiContext, payload: string): string {
  return createHmac('sha256', ctx.deps.config.secretKey).update(`console-2fa\0${payload}`).digest('base64url');
}

function pendingCookie(ctx: ApiContext, value: string, maxAge: number): void {
  const parts = [`${PENDING_COOKIE}=${value}`, 'Path=/console/login', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAge}`];
  if (ctx.deps.config.baseUrl.startsWith('https:')) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}

/** After the right password of a user with a second factor: remember who, ask for the code. */
export function askForCode(ctx: ApiContext, userId: string): void {
  const payload = `${userId}.${Date.now() + PENDING_SECONDS * 1000}`;
  pendingCookie(ctx, `${payload}.${pendingSignature(ctx, payload)}`, PENDING_SECONDS);
  redirect(ctx, '/console/login/code');
}

/** The user whose password was right a moment ago, from the signed cookie; null when absent or expired. */
function pendingUser(ctx: ApiContext): string | null {
  const raw = ctx.cookies.get(PENDING_COOKIE) ?? '';
  const m = /^(usr_[0-9A-Z]{26})\.(\d{13})\.([A-Za-z0-9_-]{43})$/.exec(raw);
  if (!m) return null;
  const want = Buffer.from(pendingSignature(ctx, `${m[1]}.${m[2]}`));
  const got = Buffer.from(m[3]!);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  return Number(m[2]) > Date.now() ? m[1]! : null;
}

function codeForm(ctx: ApiContext, status: number, message: string | null): void {
  show(ctx, null, {
    title: 'Two-step sign-in',
    status,
    body: html`${message ? html`<p class="banner warn" data-error="code">${message}</p>` : ''}
      <form method="post" action="/console/login/code" class="stack">
        <label for="code">Code from your authenticator app</label
        ><input
          type="text"
          id="code"
          name="code"
          inputmode="numeric"
          autocomplete="one-time-code"
          maxlength="20"
          required
          autofocus
          aria-describedby="code-hint"
        />
        <small id="code-hint" class="hint">Six digits, or one of your recovery codes.</small>
        <p><button type="submit">Verify</button></p>
      </form>
      <p><a href="/console/login">Start again</a></p>`,
  });
}

export function codePage(ctx: ApiContext): void {
  if (!pendingUser(ctx)) return redirect(ctx, '/console/login');
  codeForm(ctx, 200, null);
}

/** Checks a code (or a recovery code) of the user: true when it is good now, and spends it. */
async function checkCode(ctx: ApiContext, userId: string, secret: string, code: string): Promise<boolean> {
  const step = totpStep(secret, code);
  if (step !== null) return await useTotpStep(ctx.deps.sql, userId, step);
  if (/[a-z]/i.test(code)) return await useRecoveryCode(ctx.deps.sql, userId, recoveryHash(code));
  return false;
}

export async function codeSubmit(ctx: ApiContext, form: URLSearchParams): Promise<void> {
  const userId = pendingUser(ctx);
  if (!userId) return redirect(ctx, '/console/login');
  await throttle(ctx, [
    [`ip:${ctx.ip}`, IP_BUCKET],
    [`code:${userId}`, EMAIL_BUCKET],
  ]);
  const state = await getTotpState(ctx.deps.sql, userId);
  const code = (form.get('code') ?? '').trim().slice(0, 20);
  if (!state?.totp_secret || !(await checkCode(ctx, userId, state.totp_secret, code))) {
    ctx.state.log.info({ event: 'CONSOLE_LOGIN_CODE_FAILED', userId, ip: ctx.ip }, 'console sign-in code refused');
    return codeForm(ctx, 401, 'That code is wrong or was used already.');
  }
  await startSession(ctx, userId);
  pendingCookie(ctx, '', 0);
  ctx.state.log.info({ event: 'CONSOLE_LOGIN', userId, secondFactor: true }, 'console sign-in');
  redirect(ctx, '/console');
}

/** The Account page's section: on, off, or being set up. */
export async function totpSection(ctx: ApiContext, session: SessionRow): Promise<Safe> {
  const state = await getTotpState(ctx.deps.sql, session.user_id);
  const required = session.must_enrol_totp
    ? html`<p class="banner warn" role="status" data-totp-required>
        Your organization requires two-step sign-in for admins: set it up to use the console.
      </p>`
    : '';
  if (state?.totp_secret && !state.totp_pending_secret) {
    return card(
      html`${required}
        <p data-totp="on">
          <strong>On.</strong> Signing in asks for a code from your authenticator app. ${state.recovery_left} recovery
          code${state.recovery_left === 1 ? '' : 's'} left.
        </p>
        <form method="post" action="/console/account/totp/disable" class="row-form">
          ${csrfField(session)}
          ${textField({ name: 'code', label: 'Current code (to turn it off)', required: true, maxlength: 20, attrs: html`autocomplete="one-time-code"` })}
          <button type="submit" class="danger">Turn off</button>
        </form>`,
      { title: 'Two-step sign-in' },
    );
  }
  if (state?.totp_pending_secret) {
    const uri = totpUri(state.totp_pending_secret, session.email, ctx.deps.config.brand);
    const svg = (await qrSvg(uri)).replace('<svg', '<svg aria-hidden="true" focusable="false"');
    return card(
      html`${required}
        <p>
          Scan the code with your authenticator app (or type the key), then enter the six digits it shows to turn
          two-step sign-in on.
        </p>
        <div class="totp-setup">
          <div class="qr" role="img" aria-label="QR code of the key for your authenticator app">${rawSvg(svg)}</div>
          <div>
            <p>Key (base32):</p>
            <p><code data-totp-secret id="totp-secret">${state.totp_pending_secret}</code></p>
            <p><button type="button" class="btn small" data-copy="#totp-secret" hidden>Copy key</button></p>
            <form method="post" action="/console/account/totp/confirm" class="stack">
              ${csrfField(session)}
              ${textField({ name: 'code', label: 'Code from the app', required: true, maxlength: 6, attrs: html`inputmode="numeric" autocomplete="one-time-code"` })}
              <p><button type="submit" class="primary">Turn on</button></p>
            </form>
          </div>
        </div>`,
      { title: 'Two-step sign-in' },
    );
  }
  return card(
    html`${required}
      <p data-totp="off">
        Off. With it on, signing in asks for a code from an authenticator app (RFC 6238: Google Authenticator,
        1Password, Aegis, …) after your password.
      </p>
      <form method="post" action="/console/account/totp/start">
        ${csrfField(session)}
        <button type="submit" class="primary">Set up two-step sign-in</button>
      </form>`,
    { title: 'Two-step sign-in' },
  );
}

/** The QR library's SVG: markup made on the server from the URI alone (no user text in it). */
function rawSvg(svg: string): Safe {
  // Only an <svg> of paths is let through, so nothing else can enter the page this way.
  if (!/^<svg[^<>]*>(?:<path [^<>]*\/>)+<\/svg>\s*$/.test(svg)) throw new Error('unexpected QR code markup');
  return new Safe(svg);
}

async function startAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  await setPendingTotp(ctx.deps.sql, session.user_id, newTotpSecret());
  redirect(ctx, '/console/account#totp');
}

async function confirmAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const state = await getTotpState(ctx.deps.sql, session.user_id);
  const secret = state?.totp_pending_secret;
  if (!secret) throw new ApiError('invalid_state', 'Start the set-up first');
  await throttle(ctx, [[`code:${session.user_id}`, EMAIL_BUCKET]]);
  const step = totpStep(secret, form.get('code') ?? '');
  if (step === null) throw validationError('That code is wrong: check the clock of the device and try the next one');
  const codes = newRecoveryCodes();
  if (!(await confirmTotp(ctx.deps.sql, session.user_id, secret, step, codes.map(recoveryHash)))) {
    throw new ApiError('conflict', 'The set-up changed meanwhile; start again');
  }
  await audit(ctx, session, 'user.totp_enabled', { type: 'user', id: session.user_id });
  show(ctx, session, {
    title: 'Two-step sign-in is on',
    active: '/console/account',
    body: html`<p class="banner warn">
        Keep these recovery codes somewhere safe: each signs you in once without the app. They are shown only once.
      </p>
      <ul class="recovery-codes" id="recovery-codes" data-recovery-codes>
        ${codes.map((c) => html`<li><code>${c}</code></li>`)}
      </ul>
      <p><button type="button" class="btn" data-copy="#recovery-codes" hidden>Copy codes</button></p>
      <p><a class="btn primary" href="/console">Continue</a></p>`,
  });
}

async function disableAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const state = await getTotpState(ctx.deps.sql, session.user_id);
  if (!state?.totp_secret) throw new ApiError('invalid_state', 'Two-step sign-in is off');
  await throttle(ctx, [[`code:${session.user_id}`, EMAIL_BUCKET]]);
  if (!(await checkCode(ctx, session.user_id, state.totp_secret, (form.get('code') ?? '').trim()))) {
    throw validationError('That code is wrong or was used already');
  }
  await disableTotp(ctx.deps.sql, session.user_id);
  await audit(ctx, session, 'user.totp_disabled', { type: 'user', id: session.user_id });
  redirect(ctx, '/console/account?done=Two-step+sign-in+is+off.');
}

/** Settings: whether admins must use a second factor. */
export function requireForm(session: SessionRow, required: boolean): Safe {
  return html`<form method="post" action="/console/settings/security" class="stack">
    ${csrfField(session)}
    <label class="check"
      ><input type="checkbox" name="require_admin_totp" value="on" ${required ? html`checked` : ''} /> Require two-step
      sign-in for admins</label
    >
    <p class="muted">
      An admin without it is sent to Account to set it up before anything else. Members may use it too.
    </p>
    <p><button type="submit">Save</button></p>
  </form>`;
}

async function requireAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const required = form.get('require_admin_totp') === 'on';
  if (required && !session.totp_enabled) {
    throw new ApiError('invalid_state', 'Set up two-step sign-in for yourself first (Account), then require it');
  }
  await setRequireAdminTotp(ctx.deps.sql, session.org_id, required);
  await audit(
    ctx,
    session,
    'organization.updated',
    { type: 'organization', id: session.org_id },
    {
      change: 'require_admin_totp',
      require_admin_totp: required,
    },
  );
  redirect(
    ctx,
    `/console/settings?done=${required ? 'Admins+now+need+two-step+sign-in.' : 'Two-step+sign-in+is+optional.'}`,
  );
}

/** Pages an admin who must set up a second factor may still use. */
export const ENROL_PATHS = ['/account', '/account/totp/start', '/account/totp/confirm', '/logout'];

export function mustEnrol(session: SessionRow, rule: PageRule): boolean {
  return session.must_enrol_totp && !ENROL_PATHS.includes(rule.path);
}

export const TOTP_PAGES: PageRule[] = [
  { method: 'POST', path: '/account/totp/start', role: 'member', page: startAction },
  { method: 'POST', path: '/account/totp/confirm', role: 'member', page: confirmAction },
  { method: 'POST', path: '/account/totp/disable', role: 'member', page: disableAction },
  { method: 'POST', path: '/settings/security', role: 'admin', page: requireAction },
];
