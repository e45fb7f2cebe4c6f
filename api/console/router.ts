// The web console (DESIGN §2; README "Web console"), mounted at /console beside the API: server-
// rendered pages, no script. Each page row says who may open it; the wrapper signs the request
// in (or sends it to the login page), checks the CSRF token of every POST and the role, and
// renders any failure as a page.
import { readFileSync } from 'node:fs';
import Router from '@koa/router';
import type Koa from 'koa';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError } from '../../shared/errors.js';
import { fromRoot } from '../../shared/paths.js';
import type { ApiContext, ApiCustom, ApiState } from '../types.js';
import { domainsPage, verifyDomainAction } from './domains.js';
import { readForm } from './form.js';
import { keysPage, mintKeyAction, revokeKeyAction, rotateKeyAction } from './keys.js';
import { login, loginPage, logout } from './login.js';
import { metricsPage } from './metrics.js';
import { overviewPage } from './overview.js';
import { redirect, SECURITY_HEADERS, showError, type ConsoleRequest } from './respond.js';
import { checkCsrf, checkOrigin, loadSession } from './session.js';
import { accountPage, addUserAction, changePasswordAction, usersPage } from './users.js';
import { webhooksPage } from './webhooks.js';

type Page = (ctx: ApiContext, req: ConsoleRequest) => Promise<void>;

interface PageRule {
  method: 'GET' | 'POST';
  path: string;
  /** Lowest role that may use it. */
  role: 'member' | 'admin';
  page: Page;
}

export const CONSOLE_PAGES: PageRule[] = [
  { method: 'GET', path: '/', role: 'member', page: overviewPage },
  { method: 'POST', path: '/logout', role: 'member', page: logout },
  { method: 'GET', path: '/keys', role: 'member', page: keysPage },
  { method: 'POST', path: '/keys', role: 'member', page: mintKeyAction },
  { method: 'POST', path: '/keys/:id/revoke', role: 'member', page: revokeKeyAction },
  { method: 'POST', path: '/keys/:id/rotate', role: 'member', page: rotateKeyAction },
  { method: 'GET', path: '/metrics', role: 'member', page: metricsPage },
  { method: 'GET', path: '/account', role: 'member', page: accountPage },
  { method: 'POST', path: '/account/password', role: 'member', page: changePasswordAction },
  { method: 'GET', path: '/domains', role: 'admin', page: domainsPage },
  { method: 'POST', path: '/domains/:id/verify', role: 'admin', page: verifyDomainAction },
  { method: 'GET', path: '/webhooks', role: 'admin', page: webhooksPage },
  { method: 'GET', path: '/users', role: 'admin', page: usersPage },
  { method: 'POST', path: '/users', role: 'admin', page: addUserAction },
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
    const form = await readForm(ctx);
    if (rule.method === 'POST') checkCsrf(session, form);
    if (rule.role === 'admin' && session.role !== 'admin') {
      throw new ApiError('forbidden', 'This page is for admins of the organization');
    }
    await rule.page(ctx, { session, form });
  } catch (err) {
    showError(ctx, session, err);
  }
}

let css: Buffer | null = null;

function stylesheet(ctx: ApiContext): void {
  ctx.set('Cache-Control', 'public, max-age=3600');
  ctx.type = 'text/css; charset=utf-8';
  ctx.body = css ??= readFileSync(fromRoot('api', 'console', 'assets', 'console.css'));
}

function buildRouter(): Router<ApiState, ApiCustom> {
  const router = new Router<ApiState, ApiCustom>({ prefix: '/console', strict: false });
  router.get('/assets/console.css', stylesheet as never);
  router.get('/login', loginPage as never);
  router.post('/login', (async (ctx: ApiContext) => login(ctx, await readForm(ctx))) as never);
  for (const rule of CONSOLE_PAGES) router.register(rule.path, [rule.method], [signedIn(rule) as never]);
  return router;
}

/** Everything under /console; other paths pass through to the API. */
export function consoleMiddleware(): Koa.Middleware<ApiState, ApiCustom> {
  const routes = buildRouter().routes();
  return async (ctx, next) => {
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) return await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) ctx.set(name, value);
    const c = ctx as unknown as ApiContext;
    try {
      if (ctx.method === 'POST') checkOrigin(c);
      await routes(ctx as never, async () => {
        throw new ApiError('not_found', `No console page at ${ctx.path}`);
      });
    } catch (err) {
      showError(c, null, err);
    }
  };
}
