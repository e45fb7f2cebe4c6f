// Rewrites a message's HTML for click and open tracking. A real tokenizer (htmlparser2) finds
// the <a> tags, so links inside comments, <script>, <style> or attribute values are left alone;
// only the href value of each tracked tag is replaced and every other byte is kept as written.
import { Parser } from 'htmlparser2';
import { clickUrl, isHttpUrl, openPixelUrl, type LinkParams } from './tracking-links.js';

export interface InstrumentOptions extends LinkParams {
  opens: boolean;
  clicks: boolean;
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

// Attributes inside one start tag: name, then an optional value (quoted or bare).
const ATTR = /([^\s"'>/=]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?/y;

/** The [start, end) range of the href attribute (name through value) inside a start tag. */
function hrefRange(tag: string): [number, number] | null {
  // Skip "<a" (the tag name), then walk the attributes one by one.
  const nameEnd = /^<[^\s/>]+/.exec(tag);
  let i = nameEnd ? nameEnd[0].length : tag.length;
  while (i < tag.length) {
    while (i < tag.length && /[\s/]/.test(tag[i]!)) i++;
    ATTR.lastIndex = i;
    const m = ATTR.exec(tag);
    if (!m || m[0] === '') return null;
    if (m[1]!.toLowerCase() === 'href') return [i, i + m[0].length];
    i += m[0].length;
  }
  return null;
}

function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
}

/** Our own tracking links (the unsubscribe link above all) are never wrapped again. */
function isOwnLink(href: string, baseUrl: string): boolean {
  return href.startsWith(`${baseUrl.replace(/\/+$/, '')}/t/`);
}

function pixelTag(o: InstrumentOptions): string {
  const src = escapeAttr(openPixelUrl(o));
  return `<img src="${src}" width="1" height="1" alt="" border="0" style="height:1px !important;width:1px !important;border-width:0 !important;margin:0 !important;padding:0 !important" />`;
}

/**
 * The HTML with http(s) links routed through the click redirect (not mailto:, anchors, relative
 * links, our own /t/ links such as unsubscribe, or links marked `data-tern-notrack`) and, when
 * opens are tracked, the pixel placed before the last `</body>` (or appended).
 */
export function instrumentHtml(html: string, o: InstrumentOptions): string {
  if (!o.opens && !o.clicks) return html;
  const edits: Edit[] = [];
  let bodyClose = -1;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (!o.clicks || name !== 'a' || attribs.href === undefined) return;
        if ('data-tern-notrack' in attribs) return;
        const href = attribs.href.trim();
        if (!isHttpUrl(href) || isOwnLink(href, o.baseUrl)) return;
        const start = parser.startIndex;
        const tag = html.slice(start, parser.endIndex + 1);
        const range = hrefRange(tag);
        if (!range) return;
        const tracked = clickUrl({ ...o, url: href });
        edits.push({ start: start + range[0], end: start + range[1], text: `href="${escapeAttr(tracked)}"` });
      },
      onclosetag(name, isImplied) {
        if (name === 'body' && !isImplied) bodyClose = parser.startIndex;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  if (o.opens) edits.push({ start: bodyClose === -1 ? html.length : bodyClose, end: -1, text: pixelTag(o) });
  return applyEdits(html, edits);
}

function applyEdits(html: string, edits: Edit[]): string {
  edits.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const e of edits) {
    out += html.slice(at, e.start) + e.text;
    at = e.end === -1 ? e.start : e.end;
  }
  return out + html.slice(at);
}
