// Tracking links, served by the web process outside /api/v1 and without an API key (DESIGN §2,
// §6): the token itself is the credential. A token that is malformed, tampered or of the wrong
// kind is 404, so /t/c never redirects anywhere the message did not link to. Opens and clicks
// answer even when recording fails (a reader must never see an error for our bookkeeping);
// an unsubscribe POST fails loudly instead, so the mailbox provider retries it.
import {
  recordTrackingHit,
  verifyTrackingToken,
  type HitRequest,
  type TrackingPayload,
} from '../../shared/tracking.js';
import { mediaType, readRaw } from '../middleware/body.js';
import type { Area } from '../router.js';
import type { ApiContext } from '../types.js';
import { unsubscribePage } from './tracking-pages.js';

// A 1×1 transparent GIF (43 bytes).
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
const UNSUBSCRIBE_BODY_LIMIT = 8 * 1024;

function notFound(ctx: ApiContext): void {
  ctx.status = 404;
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = 'Not found\n';
}

function tokenOf(ctx: ApiContext, kind: TrackingPayload['kind']): TrackingPayload | null {
  const token = ctx.params.token;
  return typeof token === 'string' ? verifyTrackingToken(ctx.deps.config.secretKey, token, kind) : null;
}

/** Who asked: judged machine or person (DESIGN §20); ctx.ip follows TRUST_PROXY. */
function hitRequest(ctx: ApiContext): HitRequest {
  return { method: ctx.method, ip: ctx.ip, userAgent: ctx.get('user-agent') };
}

/** Records an open or click without letting a failure reach the reader. */
async function recordQuietly(ctx: ApiContext, p: TrackingPayload): Promise<void> {
  try {
    await recordTrackingHit(ctx.deps, p, hitRequest(ctx));
  } catch (err) {
    ctx.state.log.warn(
      { event: 'TRACKING_RECORD_FAILED', err, kind: p.kind, emailId: p.emailId },
      'tracking hit not recorded',
    );
  }
}

async function openPixel(ctx: ApiContext): Promise<void> {
  const p = tokenOf(ctx, 'o');
  if (!p) return notFound(ctx);
  await recordQuietly(ctx, p);
  ctx.status = 200;
  ctx.set('Cache-Control', 'no-store, no-cache, must-revalidate, max-age=0');
  ctx.set('Pragma', 'no-cache');
  ctx.type = 'image/gif';
  ctx.body = PIXEL_GIF;
}

async function clickRedirect(ctx: ApiContext): Promise<void> {
  const p = tokenOf(ctx, 'c');
  if (!p || !p.url) return notFound(ctx);
  await recordQuietly(ctx, p);
  // The href as written may hold what a header cannot (a line break, non-Latin-1 text): the
  // parsed form is what a browser would follow, and always a valid Location value.
  const location = new URL(p.url).href;
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.status = 302;
  ctx.set('Location', location);
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = `Redirecting to ${location}\n`;
}

function htmlPage(ctx: ApiContext, status: number, html: string): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
  ctx.set('X-Frame-Options', 'DENY');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

// Only a GET: link scanners fetch it, so it records nothing and offers the POST form.
async function unsubscribeConfirm(ctx: ApiContext): Promise<void> {
  const p = tokenOf(ctx, 'u');
  if (!p) return notFound(ctx);
  htmlPage(ctx, 200, unsubscribePage({ state: 'confirm', action: ctx.path, brand: ctx.deps.config.brand }));
}

/** RFC 8058: the POST body carries `List-Unsubscribe=One-Click` (form-urlencoded or multipart). */
function isOneClick(type: string, raw: string): boolean {
  if (type === 'application/x-www-form-urlencoded') {
    return new URLSearchParams(raw).get('List-Unsubscribe') === 'One-Click';
  }
  if (type === 'multipart/form-data') {
    return /name="?List-Unsubscribe"?\s*\r?\n\r?\nOne-Click\r?\n/i.test(raw);
  }
  return false;
}

async function unsubscribeOneClick(ctx: ApiContext): Promise<void> {
  const p = tokenOf(ctx, 'u');
  if (!p) return notFound(ctx);
  const raw = (await readRaw(ctx.req, UNSUBSCRIBE_BODY_LIMIT)).toString('utf8');
  const brand = ctx.deps.config.brand;
  if (!isOneClick(mediaType(ctx), raw)) {
    return htmlPage(ctx, 400, unsubscribePage({ state: 'bad_request', action: ctx.path, brand }));
  }
  const hit = await recordTrackingHit(ctx.deps, p);
  if (!hit.found) return htmlPage(ctx, 404, unsubscribePage({ state: 'gone', action: ctx.path, brand }));
  htmlPage(ctx, 200, unsubscribePage({ state: 'done', action: ctx.path, brand }));
}

/** The tracking links' routes for the one router (api/router.ts). */
export function trackingArea(): Area {
  return {
    prefix: '/t',
    routes: [
      { method: 'GET', path: '/t/o/:token', run: openPixel },
      { method: 'GET', path: '/t/c/:token', run: clickRedirect },
      { method: 'GET', path: '/t/u/:token', run: unsubscribeConfirm },
      { method: 'POST', path: '/t/u/:token', run: unsubscribeOneClick },
    ],
  };
}
