// HTML for the console's server-rendered pages. Every value goes through the `html` tagged
// template, which escapes whatever it interpolates unless it is already `Safe` markup built by
// `html` itself: a page cannot forget to escape a name, a reason or a URL.
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

function render(v: unknown): string {
  if (v instanceof Safe) return v.value;
  if (v === null || v === undefined || v === false) return '';
  if (Array.isArray(v)) return v.map(render).join('');
  if (v instanceof Date) return escapeHtml(v.toISOString());
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Safe {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Safe(out);
}

/** A timestamp as people read it in a table (UTC, to the minute); the full value in the title. */
export function when(d: Date | null): Safe {
  if (!d) return html`<span class="muted">never</span>`;
  const iso = d.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>`;
}

/** The hidden synchronizer token every POST form of a signed-in page carries. */
export function csrfField(session: SessionRow): Safe {
  return html`<input type="hidden" name="_csrf" value="${session.csrf_token}" />`;
}

/** A one-button POST form (revoke, verify, …). */
export function postButton(session: SessionRow, action: string, label: string, extra?: Safe): Safe {
  return html`<form method="post" action="${action}" class="inline">
    ${csrfField(session)}${extra}<button type="submit">${label}</button>
  </form>`;
}

const NAV: { path: string; label: string; admin: boolean }[] = [
  { path: '/console', label: 'Overview', admin: false },
  { path: '/console/keys', label: 'API keys', admin: false },
  { path: '/console/metrics', label: 'Metrics', admin: false },
  { path: '/console/domains', label: 'Domains', admin: true },
  { path: '/console/webhooks', label: 'Webhooks', admin: true },
  { path: '/console/users', label: 'Users', admin: true },
  { path: '/console/account', label: 'Account', admin: false },
];

export interface PageView {
  title: string;
  brand: string;
  session: SessionRow | null;
  /** Path of the nav entry to mark current. */
  active?: string;
  body: Safe;
}

function nav(session: SessionRow, active: string | undefined): Safe {
  const items = NAV.filter((n) => !n.admin || session.role === 'admin').map(
    (n) => html`<a href="${n.path}" ${n.path === active ? html` aria-current="page"` : ''}>${n.label}</a>`,
  );
  return html`<header>
    <nav><strong>${session.org_name}</strong>${items}</nav>
    <div class="who">${session.email} (${session.role}) ${postButton(session, '/console/logout', 'Sign out')}</div>
  </header>`;
}

export function page(v: PageView): string {
  const head = v.session ? nav(v.session, v.active) : html`<header><strong>${v.brand}</strong></header>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>${v.title} · ${v.brand} console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
      </head>
      <body>
        ${head}
        <main>
          <h1>${v.title}</h1>
          ${v.body}
        </main>
      </body>
    </html> `.value;
}
