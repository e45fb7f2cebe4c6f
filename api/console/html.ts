// HTML for the console's server-rendered pages. Every value goes through the `html` tagged
// template, which escapes whatever it interpolates unless it is already `Safe` markup built by
// `html` itself: a page cannot forget to escape a name, a reason or a URL. The building blocks
// every page shares (badges, cards, tables, empty states, times, form fields) live in
// ./ui.ts; the layout around a page in ./layout.ts.
import type { SessionRow } from '../../shared/db/users.js';

export class Safe {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * What a page may interpolate: markup, text, numbers, dates and lists of them. An object has no
 * text of its own ("[object Object]" on the page); the compiler refuses it here.
 */
export type HtmlValue = Safe | string | number | bigint | boolean | Date | null | undefined | readonly HtmlValue[];

function render(v: HtmlValue): string {
  if (v instanceof Safe) return v.value;
  if (v === null || v === undefined || v === false) return '';
  if (Array.isArray(v)) return (v as readonly HtmlValue[]).map(render).join('');
  if (v instanceof Date) return escapeHtml(v.toISOString());
  return escapeHtml(String(v as string | number | bigint | boolean));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Safe {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Safe(out);
}

/**
 * A timestamp: UTC to the minute as the server renders it (the no-script fallback), the exact
 * instant in `datetime`. /console/assets/console.js rewrites the text in the viewer's time zone
 * and keeps UTC in the title (shown on hover).
 */
export function when(d: Date | null, none = 'never'): Safe {
  if (!d) return html`<span class="muted">${none}</span>`;
  const iso = d.toISOString();
  return html`<time datetime="${iso}" title="${iso.slice(0, 19).replace('T', ' ')} UTC"
    >${iso.slice(0, 16).replace('T', ' ')} UTC</time
  >`;
}

/** The hidden synchronizer token every POST form of a signed-in page carries. */
export function csrfField(session: SessionRow): Safe {
  return html`<input type="hidden" name="_csrf" value="${session.csrf_token}" />`;
}

/** A one-button POST form (revoke, verify, …). */
export function postButton(
  session: SessionRow,
  action: string,
  label: string,
  extra?: Safe,
  tone: 'primary' | 'danger' | 'plain' = 'plain',
): Safe {
  return html`<form method="post" action="${action}" class="inline">
    ${csrfField(session)}${extra}<button type="submit" class="btn ${tone}">${label}</button>
  </form>`;
}
