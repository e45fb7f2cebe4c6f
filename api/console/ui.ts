// The building blocks of console pages, so that every page looks and behaves alike: status
// badges (colour and text), cards, tables that scroll inside their card, empty states that say
// what to do next, description lists, pagers and labelled form fields. docs/console.md shows how
// a page uses them.
import { escapeHtml, html, Safe } from './html.js';

export type Tone = 'ok' | 'warn' | 'bad' | 'info' | 'neutral';

export function badge(text: string, tone: Tone = 'neutral'): Safe {
  return html`<span class="badge ${tone}">${text}</span>`;
}

const TONES: Record<string, Tone> = {
  delivered: 'ok',
  opened: 'ok',
  clicked: 'ok',
  verified: 'ok',
  enabled: 'ok',
  active: 'ok',
  sent: 'info',
  sending: 'info',
  processing: 'info',
  queued: 'info',
  pending: 'info',
  scheduled: 'neutral',
  canceled: 'neutral',
  unsubscribed: 'neutral',
  disabled: 'neutral',
  delivery_delayed: 'warn',
  listed: 'bad',
  clear: 'ok',
  unknown: 'neutral',
  delayed: 'warn',
  bounced: 'bad',
  failed: 'bad',
  rejected: 'bad',
  complained: 'bad',
  revoked: 'neutral',
  failing: 'bad',
  interrupted: 'warn',
  unparsed: 'warn',
  succeeded: 'ok',
  paused: 'warn',
  draft: 'neutral',
  published: 'ok',
  running: 'info',
  completed: 'ok',
  not_started: 'neutral',
  temporary_failure: 'warn',
  failure: 'bad',
  subscribed: 'ok',
};

/** A state (email, recipient, domain, webhook…) as a badge: its words and a colour. */
export function stateBadge(state: string): Safe {
  const label = state === 'delivery_delayed' ? 'delayed' : state.replace(/_/g, ' ');
  return html`<span class="badge ${TONES[state] ?? 'neutral'}" data-state="${state}">${label}</span>`;
}

export function card(body: Safe, opts: { title?: string; titleExtra?: Safe; id?: string; cls?: string } = {}): Safe {
  const head = opts.title
    ? html`<div class="card-head">
        <h2>${opts.title}</h2>
        ${opts.titleExtra ?? ''}
      </div>`
    : '';
  return html`<section class="card ${opts.cls ?? ''}" ${opts.id ? html`id="${opts.id}"` : ''}>${head}${body}</section>`;
}

/** What the page would show, and what to do to get there. */
export function emptyState(title: string, next: Safe | string): Safe {
  return html`<div class="empty">
    <p class="empty-title">${title}</p>
    <p>${next}</p>
  </div>`;
}

export interface Column {
  label: string;
  num?: boolean;
  /** Visually hidden header (a column of buttons still needs a name). */
  hidden?: boolean;
}

/**
 * Names each cell of a row after its column (`data-label`), in order, so that on a phone the
 * row can show as a card of labelled values. A column with a hidden header (buttons) gets an
 * empty label.
 */
function labelCells(row: Safe, labels: string[]): Safe {
  let i = 0;
  return new Safe(
    row.value.replace(/<t([dh])(?=[\s>])/g, (m, kind: string, at: number) => {
      const label = labels[i++];
      // A row header (`<th scope="row">`) names the card; a cell that has a label keeps it.
      if (kind === 'h' || label === undefined || /^[^>]*\sdata-label=/.test(row.value.slice(at + 3))) return m;
      return `<td data-label="${escapeHtml(label)}"`;
    }),
  );
}

/**
 * A table inside a scrolling wrapper: wide tables scroll in their card, never the page. On phones
 * each row shows as a card of labelled values, unless `scroll` keeps the table (a long numeric
 * series reads better as a table) or the table has a phone layout of its own (`stack-sm`).
 */
export function dataTable(
  columns: (Column | string)[],
  rows: Safe[],
  opts: { label?: string; cls?: string; attrs?: Safe; scroll?: boolean } = {},
): Safe {
  const cols = columns.map((c) => (typeof c === 'string' ? { label: c } : c));
  const own = (opts.cls ?? '').split(/\s+/).includes('stack-sm');
  const cards = !opts.scroll && !own;
  if (cards) {
    const labels = cols.map((c) => (c.hidden ? '' : c.label));
    rows = rows.map((r) => labelCells(r, labels));
  }
  const cls = [opts.cls ?? '', cards ? 'cards-sm' : ''].filter(Boolean).join(' ');
  const head = cols.map((col) => {
    return html`<th scope="col" ${col.num ? html`class="num"` : ''}>
      ${col.hidden ? html`<span class="sr-only">${col.label}</span>` : col.label}
    </th>`;
  });
  // The wrapper is focusable so that keyboard users can scroll it (axe: scrollable-region-focusable).
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${opts.label ?? 'Table'}">
    <table class="${cls}" ${opts.attrs ?? ''}>
      <thead>
        <tr>
          ${head}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

/** A table as a card of its own (the table reaches the card's edges). */
export function tableCard(
  columns: (Column | string)[],
  rows: Safe[],
  opts: { label: string; cls?: string; attrs?: Safe; scroll?: boolean },
): Safe {
  return card(dataTable(columns, rows, opts), { cls: 'flush' });
}

/** Label/value pairs (an email's headers, a key's details). Rows with an empty value are left out. */
export function details(rows: [string, Safe | string | number | null | undefined][]): Safe {
  const shown = rows.filter(([, v]) => v !== null && v !== undefined && v !== '');
  return html`<dl class="details">
    ${shown.map(
      ([k, v]) =>
        html`<div>
          <dt>${k}</dt>
          <dd>${v}</dd>
        </div>`,
    )}
  </dl>`;
}

/** Newer / older links of a cursor-paged list (either may be absent). */
export function pager(links: { newer?: string | null; older?: string | null }): Safe {
  if (!links.newer && !links.older) return html``;
  return html`<nav class="pager" aria-label="Pages">
    ${links.newer ? html`<a class="btn" href="${links.newer}" rel="prev">← Newer</a>` : html`<span></span>`}
    ${links.older ? html`<a class="btn" href="${links.older}" rel="next">Older →</a>` : ''}
  </nav>`;
}

export interface TextField {
  name: string;
  label: string;
  value?: string | null;
  type?: 'text' | 'email' | 'search' | 'date' | 'datetime-local' | 'password' | 'file' | 'url' | 'number';
  placeholder?: string;
  hint?: string;
  required?: boolean;
  maxlength?: number;
  /** Extra attributes (accept=…). */
  attrs?: Safe;
}

/** A labelled input (the label names it for screen readers and browser tests). */
export function textField(f: TextField): Safe {
  const id = `f-${f.name}`;
  return html`<div class="field">
    <label for="${id}">${f.label}</label>
    <input
      id="${id}"
      name="${f.name}"
      type="${f.type ?? 'text'}"
      ${f.value ? html`value="${f.value}"` : ''}
      ${f.placeholder ? html`placeholder="${f.placeholder}"` : ''}
      ${f.required ? html`required` : ''}
      ${f.maxlength ? html`maxlength="${f.maxlength}"` : ''}
      ${f.hint ? html`aria-describedby="${id}-hint"` : ''}
      ${f.attrs ?? ''}
    />
    ${f.hint ? html`<small id="${id}-hint" class="hint">${f.hint}</small>` : ''}
  </div>`;
}

export function selectField(f: {
  name: string;
  label: string;
  value?: string | null;
  options: [string, string][];
}): Safe {
  const id = `f-${f.name}`;
  return html`<div class="field">
    <label for="${id}">${f.label}</label>
    <select id="${id}" name="${f.name}">
      ${f.options.map(
        ([v, label]) => html`<option value="${v}" ${v === (f.value ?? '') ? html`selected` : ''}>${label}</option>`,
      )}
    </select>
  </div>`;
}

/** A link to a page with the query string of `params` (empty values left out). */
export function hrefWith(path: string, params: Record<string, string | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** Checkboxes of one name in a fieldset whose legend names them (event types, domains…). */
export function checkboxGroup(f: {
  name: string;
  legend: string;
  options: [string, string][];
  checked: string[];
}): Safe {
  return html`<fieldset class="checks">
    <legend>${f.legend}</legend>
    ${f.options.map(
      ([v, label]) =>
        html`<label class="check"
          ><input type="checkbox" name="${f.name}" value="${v}" ${f.checked.includes(v) ? html`checked` : ''} />
          ${label}</label
        >`,
    )}
  </fieldset>`;
}

/** Big numbers with their names (a broadcast's progress, a queue's counts). */
export function stats(items: [string, number | string | Safe][], attrs?: Safe): Safe {
  return html`<dl class="stats" ${attrs ?? ''}>
    ${items.map(
      ([k, v]) =>
        html`<div>
          <dt>${k}</dt>
          <dd>${v}</dd>
        </div>`,
    )}
  </dl>`;
}

/**
 * A one-line banner after an action (?done=…): green for good news, red (`warn`) when the action
 * ran but its outcome is bad (a DNS check that failed), so that the colour says what the words say.
 */
export function doneBanner(text: string | null | undefined, tone: 'ok' | 'warn' = 'ok'): Safe | string {
  return text ? html`<p class="banner ${tone}" role="status" data-banner="${tone}">${text}</p>` : '';
}

/**
 * A domain name that wraps only after its dots (never inside a label): each dot is followed by a
 * line-break opportunity and the labels themselves do not break.
 */
export function domainName(name: string): Safe {
  return html`<span class="dn">${name.split('.').map((label, i) => html`${i ? html`.<wbr />` : ''}${label}`)}</span>`;
}

/** An id (key_…, usr_…): monospace, on one line. */
export function idCode(id: string): Safe {
  return html`<code class="id">${id}</code>`;
}

/** A query parameter as a trimmed string ('' when absent or repeated). */
export function queryString(query: Record<string, unknown>, name: string, max = 320): string {
  const v = query[name];
  return typeof v === 'string' ? v.trim().slice(0, max) : '';
}

/** Live | Test as two links, the current one marked (emails, broadcasts, overview, metrics). */
export function modeSwitch(current: 'live' | 'test', href: (mode: 'live' | 'test') => string): Safe {
  const link = (m: 'live' | 'test', label: string) =>
    html`<a href="${href(m)}" ${m === current ? html`aria-current="page"` : ''}>${label}</a>`;
  return html`<nav class="toggle" aria-label="Mode">${link('live', 'Live')}${link('test', 'Test')}</nav>`;
}
