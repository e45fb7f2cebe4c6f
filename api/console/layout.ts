// The one layout around every console page: a sidebar on wide screens, a top bar with a
// <details> menu on phones (works without script), the page's <h1> with its actions, and the
// page body. One stylesheet and one small script, both from /console/assets/.
import type { SessionRow } from '../../shared/db/users.js';
import { html, postButton, type Safe } from './html.js';
import { navFor } from './nav.js';

export interface PageView {
  title: string;
  brand: string;
  session: SessionRow | null;
  /** Path of the nav entry to mark current. */
  active?: string;
  /** Buttons or links beside the <h1>. */
  actions?: Safe;
  /** A line under the <h1> (ids, counts). */
  lead?: Safe;
  body: Safe;
}

function navList(session: SessionRow, active: string | undefined, label: string): Safe {
  const groups = navFor(session).map(
    (g) =>
      html`<li>
        ${g.section ? html`<span class="nav-section">${g.section}</span>` : ''}
        <ul>
          ${g.entries.map(
            (n) =>
              html`<li>
                <a href="${n.path}" ${n.path === active ? html`aria-current="page"` : ''}>${n.label}</a>
              </li>`,
          )}
        </ul>
      </li>`,
  );
  return html`<nav aria-label="${label}">
    <ul class="nav">
      ${groups}
    </ul>
  </nav>`;
}

function who(session: SessionRow): Safe {
  return html`<div class="who">
    <span class="who-email">${session.email}</span>
    <span class="muted">${session.role}</span>
    ${postButton(session, '/console/logout', 'Sign out')}
  </div>`;
}

function chrome(v: PageView, session: SessionRow): Safe {
  return html`<header class="topbar">
      <a class="brand" href="/console">${v.brand}</a>
      <span class="org">${session.org_name}</span>
      <details class="menu">
        <summary>Menu</summary>
        <div class="menu-panel">${navList(session, v.active, 'Main menu')}${who(session)}</div>
      </details>
    </header>
    <aside class="sidebar">
      <a class="brand" href="/console">${v.brand}</a>
      <p class="org">${session.org_name}</p>
      ${navList(session, v.active, 'Main')}${who(session)}
    </aside>`;
}

export function page(v: PageView): string {
  const session = v.session;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <meta name="color-scheme" content="light dark" />
        <title>${v.title} · ${v.brand} console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
        <link rel="icon" href="/console/assets/icon.svg" type="image/svg+xml" />
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body class="${session ? 'signed-in' : 'signed-out'}">
        <a class="skip" href="#main">Skip to content</a>
        ${session ? chrome(v, session) : ''}
        <main id="main">
          ${session ? '' : html`<p class="brand solo">${v.brand}</p>`}
          <div class="page-head">
            <h1>${v.title}</h1>
            ${v.actions ? html`<div class="page-actions">${v.actions}</div>` : ''}
          </div>
          ${v.lead ? html`<p class="lead">${v.lead}</p>` : ''} ${v.body}
        </main>
      </body>
    </html> `.value;
}
