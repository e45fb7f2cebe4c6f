// A message's content in the console: the HTML part in a sandboxed frame (no script, no remote
// image until the viewer asks), the text part, and the raw MIME as it was (or would be) handed
// to the receiving server (shared/mail/raw-message.ts: test-mode messages exactly as stored,
// DKIM-signed, so the console doubles as the development inbox).
//
// The HTML shown is the part as the sender gave it (or, for an SMTP relay message, as its client
// wrote it): before open and click tracking are added, so that viewing a message never records
// an open.
import { simpleParser } from 'mailparser';
import type { EmailRow } from '../../shared/db/emails.js';
import { notFound } from '../../shared/errors.js';
import { readRawMessage } from '../../shared/mail/raw-message.js';
import type { ApiContext } from '../types.js';
import { loadOrgEmail } from './email-load.js';
import { html, type Safe } from './html.js';
import type { ConsoleRequest, PageRule } from './respond.js';
import { card } from './ui.js';

export interface MessageParts {
  html: string | null;
  text: string | null;
}

/** The HTML and text parts: the stored content, or the relay message's MIME parsed. */
export async function messageParts(e: EmailRow): Promise<MessageParts> {
  if (e.html !== null || e.text !== null || !e.raw_mime) return { html: e.html, text: e.text };
  const parsed = await simpleParser(e.raw_mime);
  return { html: parsed.html === false ? null : (parsed.html ?? null), text: parsed.text ?? null };
}

/**
 * The frame's own policy: no script (the iframe's sandbox says so too), inline styles, images
 * only from data: until the viewer loads remote ones, no form, no plugin, framed only by the
 * console, and no Referer sent with a remote image.
 */
function framePolicy(images: boolean): string {
  const img = images ? 'img-src data: https: http:' : 'img-src data:';
  return `default-src 'none'; style-src 'unsafe-inline'; ${img}; font-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox`;
}

async function htmlFrame(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const parts = await messageParts(email);
  const images = ctx.query.images === '1';
  ctx.set('Content-Security-Policy', framePolicy(images));
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body =
    parts.html ??
    '<!doctype html><meta charset="utf-8"><title>No HTML part</title><p style="font-family:sans-serif">This message has no HTML part.</p>';
}

async function rawMime(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const found = await readRawMessage(ctx.deps, email.id);
  if (!found.ok) throw notFound('Email');
  ctx.set(`${ctx.deps.config.brand}-raw-source`, found.message.source);
  if (ctx.query.download === '1') {
    ctx.set('content-disposition', `attachment; filename="${email.id}.eml"`);
    ctx.type = 'message/rfc822';
  } else {
    ctx.type = 'text/plain; charset=utf-8';
  }
  ctx.body = found.message.raw;
}

export function contentCard(e: EmailRow, parts: MessageParts, images: boolean): Safe {
  const frame = parts.html
    ? html`<p class="muted">
          Shown in a sandbox: no script runs, and remote images stay off${images ? ' (now loaded)' : ''}.
          ${
            images
              ? html`<a href="/console/emails/${e.id}#content">Hide images</a>`
              : html`<a class="btn small" href="/console/emails/${e.id}?images=1#content">Load images</a>`
          }
        </p>
        <iframe
          class="message-frame"
          title="HTML part of the message"
          sandbox=""
          referrerpolicy="no-referrer"
          src="/console/emails/${e.id}/html${images ? '?images=1' : ''}"
        ></iframe>`
    : html`<p class="muted">This message has no HTML part.</p>`;
  const text = parts.text ? html`<pre data-text-part>${parts.text}</pre>` : html`<p class="muted">No text part.</p>`;
  return card(
    html`<h3>HTML part</h3>
      ${frame}
      <h3>Text part</h3>
      ${text}
      <h3>Raw MIME</h3>
      <p>
        ${
          e.mode === 'test'
            ? 'The exact bytes that would have been sent, composed and DKIM-signed. Test mode: nothing left this machine (a test-mode recipient shows as delivered once the message is stored here).'
            : 'The message as it is handed to the receiving server (composed again from the stored content).'
        }
      </p>
      <p>
        <a class="btn" href="/console/emails/${e.id}/raw">View raw MIME</a>
        <a class="btn" href="/console/emails/${e.id}/raw?download=1">Download .eml</a>
      </p>`,
    { title: 'Content', id: 'content' },
  );
}

export const EMAIL_CONTENT_PAGES: PageRule[] = [
  { method: 'GET', path: '/emails/:id/html', role: 'member', page: htmlFrame },
  { method: 'GET', path: '/emails/:id/raw', role: 'member', page: rawMime },
];
