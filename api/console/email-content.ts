// A message's content in the console: the HTML part in a sandboxed frame (no script, no remote
// image until the viewer asks), the text part, and the raw MIME as it was (or would be) handed
// to the receiving server (shared/mail/raw-message.ts: test-mode messages exactly as stored,
// DKIM-signed, so the console doubles as the development inbox).
//
// The HTML shown is the part as the sender gave it (or, for an SMTP relay message, as its client
// wrote it): before open and click tracking are added, so that viewing a message never records
// an open.
import type { Config } from '../../shared/config.js';
import type { EmailRow } from '../../shared/db/emails.js';
import { notFound } from '../../shared/errors.js';
import { parseLimits, ParseThreads } from '../../shared/mail/bounded-parse.js';
import { readRawMessage } from '../../shared/mail/raw-message.js';
import type { ApiContext } from '../types.js';
import { loadOrgEmail } from './email-load.js';
import { html, type Safe } from './html.js';
import type { ConsoleRequest, PageRule } from './respond.js';
import { card } from './ui.js';

export interface MessageParts {
  html: string | null;
  text: string | null;
  /** Why the relay message's MIME was not parsed for display (over the parse limits, or unreadable). */
  unparsed: string | null;
}

/**
 * The HTML and text parts: the stored content, or the relay message's MIME parsed on a parse
 * thread with the inbound parse limits (shared/mail/bounded-parse.ts), so that a page never waits
 * on a message built to hang the parser.
 */
export async function messageParts(e: EmailRow, config: Config): Promise<MessageParts> {
  if (e.html !== null || e.text !== null || !e.raw_mime) return { html: e.html, text: e.text, unparsed: null };
  const parser = new ParseThreads({ ...parseLimits(config), maxBytes: config.relayMaxBytes }, 1);
  try {
    const out = await parser.parseMime(e.raw_mime);
    if (out.type !== 'parsed') return { html: null, text: null, unparsed: out.reason };
    const { html: h, text } = out.mail;
    return { html: h === false ? null : (h ?? null), text: text ?? null, unparsed: null };
  } finally {
    await parser.close();
  }
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

function plainPage(text: string): string {
  return `<!doctype html><meta charset="utf-8"><title>No HTML part</title><p style="font-family:sans-serif">${text}</p>`;
}

async function htmlFrame(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const email = await loadOrgEmail(ctx, session);
  const parts = await messageParts(email, ctx.deps.config);
  const images = ctx.query.images === '1';
  ctx.set('Content-Security-Policy', framePolicy(images));
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body =
    parts.html ??
    plainPage(parts.unparsed ? 'This message was not parsed for display.' : 'This message has no HTML part.');
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
  if (parts.unparsed) return unparsedCard(e, parts.unparsed);
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
      ${text} ${rawLinks(e)}`,
    { title: 'Content', id: 'content' },
  );
}

/** A relay message whose MIME was not parsed: the reason, and its raw MIME to read or download. */
function unparsedCard(e: EmailRow, reason: string): Safe {
  return card(
    html`<p class="banner warn" role="status" data-unparsed>
        This message is not shown: its MIME was not parsed (${reason}). Its raw MIME is below.
      </p>
      ${rawLinks(e)}`,
    { title: 'Content', id: 'content' },
  );
}

function rawLinks(e: EmailRow): Safe {
  return html`<h3>Raw MIME</h3>
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
    </p>`;
}

export const EMAIL_CONTENT_PAGES: PageRule[] = [
  { method: 'GET', path: '/emails/:id/html', role: 'member', page: htmlFrame },
  { method: 'GET', path: '/emails/:id/raw', role: 'member', page: rawMime },
];
