// The audience pages: contacts with their counts and a search by address, one contact's
// properties (admins add, edit, unsubscribe and delete contacts: ./contacts-edit.ts) and the
// segments; each segment with the number of contacts its filter selects now, and its first contacts.
import { countContacts, findContact, listContacts, type ContactRow } from '../../shared/db/contacts.js';
import { countSegmentContacts, findSegment, listSegmentContacts, listSegments } from '../../shared/db/segments.js';
import { notFound } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest, type PageRule } from './respond.js';
import { CONTACT_EDIT_PAGES, contactActions } from './contacts-edit.js';
import { describeFilter, SEGMENT_EDIT_PAGES } from './segments-edit.js';
import {
  badge,
  card,
  dataTable,
  details,
  doneBanner,
  emptyState,
  hrefWith,
  pager,
  queryString,
  stats,
  tableCard,
  textField,
} from './ui.js';

const PAGE_SIZE = 50;

function cursorOf(ctx: ApiContext, k: string, prefix: 'ct' | 'seg'): string | undefined {
  const v = queryString(ctx.query, k);
  return isId(v, prefix) ? v : undefined;
}

function contactRows(rows: ContactRow[]): Safe[] {
  return rows.map(
    (c) =>
      html`<tr data-contact="${c.email}">
        <td><a class="row-link" href="/console/contacts/${c.id}">${c.email}</a></td>
        <td>${[c.first_name, c.last_name].filter(Boolean).join(' ')}</td>
        <td>${c.unsubscribed ? badge('unsubscribed', 'neutral') : badge('subscribed', 'ok')}</td>
        <td class="nowrap">${when(c.created_at)}</td>
      </tr>`,
  );
}

function paging<T extends { id: string }>(
  rows: T[],
  base: string,
  params: Record<string, string>,
  page: { after?: string; before?: string },
) {
  const shown = rows.slice(0, PAGE_SIZE);
  const more = rows.length > PAGE_SIZE;
  const link = (c: Record<string, string>) => hrefWith(base, { ...params, ...c });
  const older = shown.length && (more || page.before) ? link({ after: shown.at(-1)!.id }) : null;
  const newer = shown.length && (page.after || (page.before && more)) ? link({ before: shown[0]!.id }) : null;
  return { shown, pager: pager({ newer, older }) };
}

async function contactsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const email = queryString(ctx.query, 'email');
  const page = { after: cursorOf(ctx, 'after', 'ct'), before: cursorOf(ctx, 'before', 'ct') };
  const [rows, counts] = await Promise.all([
    listContacts(sql, session.org_id, { email: email || undefined }, { limit: PAGE_SIZE, ...page }),
    countContacts(sql, session.org_id),
  ]);
  const { shown, pager: nav } = paging(rows, '/console/contacts', { email }, page);
  const search = html`<form
    method="get"
    action="/console/contacts"
    class="filters"
    role="search"
    aria-label="Find a contact"
  >
    ${textField({ name: 'email', label: 'Address', type: 'search', value: email })}
    <div class="buttons">
      <button type="submit" class="primary">Find</button>
      <a class="btn" href="/console/contacts">Clear</a>
    </div>
  </form>`;
  const list = shown.length
    ? dataTable(['Address', 'Name', 'Subscription', 'Added'], contactRows(shown), { label: 'Contacts' })
    : email
      ? emptyState('No contact has this address.', 'Check the spelling, or clear the search.')
      : emptyState(
          'No contacts yet.',
          html`${session.role === 'admin' ? html`<a href="/console/contacts/new">Add a contact</a>, add` : 'Add'} them
            with <code>POST /api/v1/contacts</code>, or import a CSV file with
            <code>POST /api/v1/contacts/imports</code>.`,
        );
  show(ctx, session, {
    title: 'Contacts',
    active: '/console/contacts',
    actions:
      session.role === 'admin' ? html`<a class="btn primary" href="/console/contacts/new">Add contact</a>` : undefined,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${stats([
      ['Contacts', counts.total],
      ['Subscribed', counts.total - counts.unsubscribed],
      ['Unsubscribed', counts.unsubscribed],
    ])}
    ${card(search)}${card(list, { cls: 'flush' })}${nav}`,
  });
}

function propertyValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

async function contactPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const id = ctx.params.id ?? '';
  const c = isId(id, 'ct') ? await findContact(ctx.deps.sql, session.org_id, id) : null;
  if (!c) throw notFound('Contact');
  const props = Object.entries(c.properties);
  show(ctx, session, {
    title: c.email,
    active: '/console/contacts',
    lead: html`${c.unsubscribed ? badge('unsubscribed', 'neutral') : badge('subscribed', 'ok')}`,
    actions: contactActions(session, c),
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${card(
        details([
          ['Id', html`<code>${c.id}</code>`],
          ['First name', c.first_name],
          ['Last name', c.last_name],
          ['Added', when(c.created_at)],
          ['Updated', when(c.updated_at)],
        ]),
        { title: 'Contact' },
      )}
      ${
        props.length
          ? tableCard(
              ['Property', 'Value'],
              props.map(
                ([k, v]) =>
                  html`<tr>
                    <td><code>${k}</code></td>
                    <td>${propertyValue(v)}</td>
                  </tr>`,
              ),
              { label: 'Properties' },
            )
          : card(
              emptyState(
                'No properties.',
                'Properties are set through the API or a CSV import (POST /api/v1/contacts/imports).',
              ),
              {
                title: 'Properties',
              },
            )
      }
      <p><a class="btn" href="${hrefWith('/console/emails', { to: c.email })}">Emails to this contact</a></p>`,
  });
}

async function segmentsPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const rows = (await listSegments(sql, session.org_id, { limit: PAGE_SIZE })).slice(0, PAGE_SIZE);
  const counts = await Promise.all(rows.map((s) => countSegmentContacts(sql, session.org_id, s)));
  const list = rows.length
    ? tableCard(
        ['Segment', { label: 'Contacts', num: true }, 'Created'],
        rows.map(
          (s, i) =>
            html`<tr data-segment="${s.id}">
              <td><a class="row-link" href="/console/segments/${s.id}">${s.name}</a></td>
              <td class="num">${counts[i]!}</td>
              <td class="nowrap">${when(s.created_at)}</td>
            </tr>`,
        ),
        { label: 'Segments' },
      )
    : card(
        emptyState(
          'No segments yet.',
          html`${session.role === 'admin' ? html`<a href="/console/segments/new">Create one</a>, or define` : 'Define'}
            one with <code>POST /api/v1/segments</code>.`,
        ),
      );
  show(ctx, session, {
    title: 'Segments',
    active: '/console/segments',
    actions:
      session.role === 'admin' ? html`<a class="btn primary" href="/console/segments/new">New segment</a>` : undefined,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${list}`,
  });
}

async function segmentPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const id = ctx.params.id ?? '';
  const s = isId(id, 'seg') ? await findSegment(sql, session.org_id, id) : null;
  if (!s) throw notFound('Segment');
  const page = { after: cursorOf(ctx, 'after', 'ct'), before: cursorOf(ctx, 'before', 'ct') };
  const [count, rows] = await Promise.all([
    countSegmentContacts(sql, session.org_id, s),
    listSegmentContacts(sql, session.org_id, s, { limit: PAGE_SIZE, ...page }),
  ]);
  const { shown, pager: nav } = paging(rows, `/console/segments/${s.id}`, {}, page);
  show(ctx, session, {
    title: s.name,
    active: '/console/segments',
    lead: html`${count} contact${count === 1 ? '' : 's'} match now.`,
    actions:
      session.role === 'admin'
        ? html`<a class="btn danger" href="/console/segments/${s.id}/delete">Delete…</a>`
        : undefined,
    body: html`${doneBanner(queryString(ctx.query, 'done'))}${card(
      html`<p data-filter-words>Contacts where ${describeFilter(s.filter)}.</p>
        <details>
          <summary>As JSON (the API's <code>filter</code>)</summary>
          <pre class="body" tabindex="0">${JSON.stringify(s.filter, null, 2)}</pre>
        </details>`,
      { title: 'Filter' },
    )}
    ${card(
      shown.length
        ? dataTable(['Address', 'Name', 'Subscription', 'Added'], contactRows(shown), { label: 'Contacts' })
        : emptyState('No contact matches.', 'Contacts appear here as soon as they match the filter.'),
      { cls: 'flush' },
    )}${nav}`,
  });
}

export const AUDIENCE_PAGES: PageRule[] = [
  { method: 'GET', path: '/contacts', role: 'member', page: contactsPage },
  ...CONTACT_EDIT_PAGES,
  { method: 'GET', path: '/contacts/:id', role: 'member', page: contactPage },
  { method: 'GET', path: '/segments', role: 'member', page: segmentsPage },
  ...SEGMENT_EDIT_PAGES,
  { method: 'GET', path: '/segments/:id', role: 'member', page: segmentPage },
];
