// The web console (DESIGN §13; docs/console.md), mounted at /console beside the API: server-
// rendered pages, one stylesheet and one small script. Each page row says who may open it; the
// wrapper signs the request in (or sends it to the login page), checks the CSRF token of every
// POST and the role, and renders any failure as a page. The routes are an area of the web
// process's one router.
import { readFileSync } from 'node:fs';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError } from '../../shared/errors.js';
import { fromRoot } from '../../shared/paths.js';
import type { Area, Route } from '../router.js';
import { refuseNul } from '../text-checks.js';
import type { ApiContext } from '../types.js';
import { auditPage } from './audit-page.js';
import { LOG_PAGES } from './logs-page.js';
import { DOMAIN_PAGES } from './domains.js';
import { EMAIL_PAGES } from './emails.js';
import { readForm } from './form.js';
import { keysPage, mintKeyAction, revokeKeyAction, rotateConfirm, rotateKeyAction } from './keys.js';
import { login, loginPage, logout } from './login.js';
import { metricsPage } from './metrics.js';
import { overviewPage } from './overview.js';
import { reputationPage } from './reputation.js';
import { QUEUE_PAGES } from './queues.js';
import { AUDIENCE_PAGES } from './audience.js';
import { AUTOMATION_PAGES } from './automations.js';
import { BROADCAST_PAGES } from './broadcasts.js';
import { SETTINGS_PAGES } from './settings.js';
import { TEMPLATE_PAGES } from './templates.js';
import { redirect, SECURITY_HEADERS, showError, type PageRule } from './respond.js';
import { checkCsrf, checkOrigin, loadSession } from './session.js';
import { codePage, codeSubmit, mustEnrol, TOTP_PAGES } from './totp.js';
import { SUPPRESSION_PAGES } from './suppressions.js';
import { accountPage, addUserAction, changePasswordAction, usersPage } from './users.js';
import { WEBHOOK_PAGES } from './webhooks.js';

export type { PageRule };

export const CONSOLE_PAGES: PageRule[] = [
  { method: 'GET', path: '/', role: 'member', page: overviewPage },
  { method: 'POST', path: '/logout', role: 'member', page: logout },
  ...EMAIL_PAGES,
  ...SUPPRESSION_PAGES,
  ...TEMPLATE_PAGES,
  ...BROADCAST_PAGES,
  ...AUTOMATION_PAGES,
  ...AUDIENCE_PAGES,
  { method: 'GET', path: '/keys', role: 'member', page: keysPage },
  { method: 'POST', path: '/keys', role: 'member', page: mintKeyAction },
  { method: 'POST', path: '/keys/:id/revoke', role: 'member', page: revokeKeyAction },
  { method: 'GET', path: '/keys/:id/rotate', role: 'member', page: rotateConfirm },
  { method: 'POST', path: '/keys/:id/rotate', role: 'member', page: rotateKeyAction },
  { method: 'GET', path: '/metrics', role: 'member', page: metricsPage },
  { method: 'GET', path: '/reputation', role: 'member', page: reputationPage },
  ...QUEUE_PAGES,
  { method: 'GET', path: '/account', role: 'member', page: accountPage },
  { method: 'POST', path: '/account/password', role: 'member', page: changePasswordAction },
  ...TOTP_PAGES,
  ...DOMAIN_PAGES,
  ...WEBHOOK_PAGES,
  { method: 'GET', path: '/users', role: 'admin', page: usersPage },
  { method: 'POST', path: '/users', role: 'admin', page: addUserAction },
  { method: 'GET', path: '/audit', role: 'admin', page: auditPage },
  ...LOG_PAGES,
  ...SETTINGS_PAGES,
];

function signedIn(rule: PageRule) {
  return async (ctx: ApiContext): Promise<void> => {
    const session = await loadSession(ctx);
    if (!session) return redirect(ctx, '/console/login');
    await guarded(ctx, session, rule);
  };
}

async function guarded(ctx: ApiContext, session: SessionRow, rule: PageRule): Promise<void> {
  try {
    refuseNul(ctx.params, 'path');
    refuseNul(ctx.query, 'query');
    // The role first: a member's upload to an admin page is refused before it is read.
    if (rule.role === 'admin' && session.role !== 'admin') {
      throw new ApiError('forbidden', 'This page is for admins of the organization');
    }
    // An admin whose organization requires a second factor sets it up before anything else.
    if (mustEnrol(session, rule)) return redirect(ctx, '/console/account');
    const { form, files } = await readForm(ctx, rule.uploadLimit);
    if (rule.method === 'POST') checkCsrf(session, form);
    await rule.page(ctx, { session, form, files });
  } catch (err) {
    showError(ctx, session, err);
  }
}

/** The files under /console/assets/: read once, cached by the browser for an hour. */
const ASSETS: Record<string, string> = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};
const assetCache = new Map<string, Buffer>();

function asset(name: string) {
  return (ctx: ApiContext): void => {
    let body = assetCache.get(name);
    if (!body) assetCache.set(name, (body = readFileSync(fromRoot('api', 'console', 'assets', name))));
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = ASSETS[name]!;
    ctx.body = body;
  };
}

/**
 * /favicon.ico: the console's icon. Browsers ask for it on any page of the host (the raw MIME of
 * a message, the API reference), so it is an area of its own at the root.
 */
export function faviconArea(): Area {
  return { prefix: '/favicon.ico', routes: [{ method: 'GET', path: '/favicon.ico', run: asset('icon.svg') }] };
}

/** The console's routes for the one router (api/router.ts), each page behind `guard`. */
export function consoleArea(): Area {
  const routes: Route[] = [
    ...Object.keys(ASSETS).map((name) => ({
      method: 'GET' as const,
      path: `/console/assets/${name}`,
      run: asset(name),
    })),
    { method: 'GET', path: '/console/login', run: loginPage },
    { method: 'POST', path: '/console/login', run: async (ctx) => login(ctx, (await readForm(ctx)).form) },
    { method: 'GET', path: '/console/login/code', run: codePage },
    { method: 'POST', path: '/console/login/code', run: async (ctx) => codeSubmit(ctx, (await readForm(ctx)).form) },
  ];
  for (const rule of CONSOLE_PAGES) {
    routes.push({ method: rule.method, path: `/console${rule.path === '/' ? '' : rule.path}`, run: signedIn(rule) });
  }
  return { prefix: '/console', routes, around: guard };
}

/**
 * Around every console route and miss: the security headers, the Origin check of a POST, and any
 * failure (an unknown page included) rendered as a page, never as the API's JSON.
 */
async function guard(ctx: ApiContext, next: () => Promise<unknown>): Promise<void> {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) ctx.set(name, value);
  try {
    if (ctx.method === 'POST') checkOrigin(ctx);
    await next();
  } catch (err) {
    showError(ctx, null, err);
  }
}
