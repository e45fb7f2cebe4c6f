// How console pages answer: full HTML pages that are never cached and cannot be framed, 303
// redirects after a successful form post, and errors as pages (never the API's JSON).
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, isUnavailable } from '../../shared/errors.js';
import type { ApiContext } from '../types.js';
import { html, page, type Safe } from './html.js';

export interface ConsoleRequest {
  session: SessionRow;
  /** The POST form (empty for a GET). */
  form: URLSearchParams;
}

export const SECURITY_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

export function show(
  ctx: ApiContext,
  session: SessionRow | null,
  v: { title: string; body: Safe; active?: string; status?: number },
): void {
  ctx.status = v.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page({ title: v.title, brand: ctx.deps.config.brand, session, active: v.active, body: v.body });
}

/** 303: the browser follows with a GET, so a reload never re-posts the form. */
export function redirect(ctx: ApiContext, path: string): void {
  ctx.status = 303;
  ctx.redirect(path);
  ctx.body = `See ${path}\n`;
}

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Sign-in failed',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Not possible now',
  413: 'Too large',
  415: 'Bad request',
  422: 'Please check the form',
  429: 'Too many attempts',
  503: 'Unavailable',
};

/** Renders any failure as a page; faults that are not ApiErrors are logged and hidden. */
export function showError(ctx: ApiContext, session: SessionRow | null, err: unknown): void {
  let e: ApiError;
  if (err instanceof ApiError) e = err;
  else if (isUnavailable(err)) e = new ApiError('unavailable', 'A backing service is unavailable; retry shortly');
  else {
    ctx.state.log.error({ event: 'CONSOLE_INTERNAL_ERROR', err, path: ctx.path }, 'console page failed');
    e = new ApiError('internal_error', 'Something went wrong on our side; the error has been logged');
  }
  for (const [name, value] of Object.entries(e.headers)) ctx.set(name, value);
  // Back to the section the form was on (/console/keys/… → /console/keys).
  const section = /^\/console(\/[a-z]+)?/.exec(ctx.path)?.[0] ?? '/console';
  const back = ctx.method === 'POST' ? html`<p><a href="${section}">Back</a></p>` : '';
  show(ctx, session, {
    title: TITLES[e.status] ?? 'Error',
    status: e.status,
    body: html`<p class="banner warn" data-error="${e.code}">${e.message}</p>
      ${back}`,
  });
}
