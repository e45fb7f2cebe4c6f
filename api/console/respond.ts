// How console pages answer: full HTML pages that are never cached and cannot be framed, 303
// redirects after a successful form post, and errors as pages (never the API's JSON).
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, isUnavailable } from '../../shared/errors.js';
import type { ApiContext } from '../types.js';
import { csrfField, html, type Safe } from './html.js';
import { page } from './layout.js';

export interface ConsoleRequest {
  session: SessionRow;
  /** The POST form's fields (empty for a GET). */
  form: URLSearchParams;
  /** Files of a multipart POST (only on rules that accept uploads). */
  files: Map<string, UploadedFile>;
}

export interface UploadedFile {
  filename: string;
  type: string;
  data: Buffer;
}

export type Page = (ctx: ApiContext, req: ConsoleRequest) => Promise<void>;

/** One route of the console: who may use it and the function that answers. */
export interface PageRule {
  method: 'GET' | 'POST';
  /** Under /console ('/' is /console itself). */
  path: string;
  /** Lowest role that may use it. */
  role: 'member' | 'admin';
  page: Page;
  /** Accepts multipart/form-data up to this many bytes (file uploads); otherwise url-encoded forms only. */
  uploadLimit?: number;
}

export const SECURITY_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

export function show(
  ctx: ApiContext,
  session: SessionRow | null,
  v: { title: string; body: Safe; active?: string; status?: number; actions?: Safe; lead?: Safe },
): void {
  ctx.status = v.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page({ ...v, brand: ctx.deps.config.brand, session });
}

export interface Confirmation {
  title: string;
  active: string;
  /** What will happen, in a sentence or two. */
  question: Safe;
  /** Where the form posts (the same path as the GET that shows it). */
  action: string;
  confirmLabel: string;
  /** Where "Keep it" goes back to. */
  back: string;
  danger?: boolean;
  /** Extra hidden fields. */
  fields?: Record<string, string>;
}

/**
 * The confirmation step of a console action: a GET shows what will happen and a POST form
 * (with the CSRF token) that does it; nothing changes until the form is sent.
 */
export function confirmPage(ctx: ApiContext, session: SessionRow, c: Confirmation): void {
  const hidden = Object.entries(c.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`);
  show(ctx, session, {
    title: c.title,
    active: c.active,
    body: html`<section class="card confirm">
      <p>${c.question}</p>
      <form method="post" action="${c.action}" class="confirm-actions">
        ${csrfField(session)}${hidden}
        <button type="submit" class="btn ${c.danger ? 'danger' : 'primary'}">${c.confirmLabel}</button>
        <a class="btn" href="${c.back}">Keep it, go back</a>
      </form>
    </section>`,
  });
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
  const back = ctx.method === 'POST' ? html`<p><a class="btn" href="${section}">Back</a></p>` : '';
  show(ctx, session, {
    title: TITLES[e.status] ?? 'Error',
    status: e.status,
    body: html`<p class="banner warn" data-error="${e.code}">${e.message}</p>
      ${back}`,
  });
}
