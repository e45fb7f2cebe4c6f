// Contacts changed from the console (admins, as FULL keys on the API): add one, edit its name and
// subscription, unsubscribe it, delete it, each through the functions the API's contact routes
// call (shared/db/contacts.ts), recorded by `audit`; unsubscribing and deleting go through a
// confirmation. A contact added here starts the automations its creation triggers, as one added
// with an unrestricted key does.
import { deleteContact, findContact, updateContact, upsertContact, type ContactRow } from '../../shared/db/contacts.js';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import { parseAddress } from '../../shared/mail/addresses.js';
import type { ApiContext } from '../types.js';
import { audit } from './audit.js';
import { csrfField, html, type Safe } from './html.js';
import { confirmPage, redirect, show, type ConsoleRequest, type PageRule } from './respond.js';
import { card, hrefWith, textField } from './ui.js';

const ACTIVE = '/console/contacts';
const NAME_MAX = 256;

async function loadContact(ctx: ApiContext, session: SessionRow): Promise<ContactRow> {
  const id = ctx.params.id ?? '';
  const c = isId(id, 'ct') ? await findContact(ctx.deps.sql, session.org_id, id) : null;
  if (!c) throw notFound('Contact');
  return c;
}

/** A name field: trimmed, empty = none. */
function nameOf(form: URLSearchParams, name: string, label: string): string | null {
  const v = (form.get(name) ?? '').trim();
  if (v.length > NAME_MAX) throw validationError(`${label}: at most ${NAME_MAX} characters`);
  return v === '' ? null : v;
}

function contactForm(session: SessionRow, c: ContactRow | null): Safe {
  const action = c ? `/console/contacts/${c.id}/edit` : '/console/contacts';
  return html`<form method="post" action="${action}" class="stack">
    ${csrfField(session)}
    ${c ? '' : textField({ name: 'email', label: 'Email address', type: 'email', required: true, maxlength: 320 })}
    ${textField({ name: 'first_name', label: 'First name', value: c?.first_name ?? null, maxlength: NAME_MAX })}
    ${textField({ name: 'last_name', label: 'Last name', value: c?.last_name ?? null, maxlength: NAME_MAX })}
    <label class="check"
      ><input type="checkbox" name="subscribed" value="on" ${!c || !c.unsubscribed ? html`checked` : ''} /> Subscribed
      (receives broadcasts)</label
    >
    <p><button type="submit" class="primary">${c ? 'Save contact' : 'Add contact'}</button></p>
  </form>`;
}

async function newPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  show(ctx, session, { title: 'Add a contact', active: ACTIVE, body: card(contactForm(session, null)) });
}

async function createAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const email = (form.get('email') ?? '').trim();
  const parsed = parseAddress(email);
  if (!parsed.ok) throw validationError(`Email address "${email}" ${parsed.reason}`);
  if (await findContact(ctx.deps.sql, session.org_id, email)) {
    throw new ApiError('conflict', `${email.toLowerCase()} is a contact already`);
  }
  const { contact } = await upsertContact(ctx.deps.sql, {
    orgId: session.org_id,
    email,
    firstName: nameOf(form, 'first_name', 'First name'),
    lastName: nameOf(form, 'last_name', 'Last name'),
    unsubscribed: form.get('subscribed') !== 'on',
    keyId: null,
    startsAutomations: true,
  });
  await audit(ctx, session, 'contact.created', { type: 'contact', id: contact.id });
  redirect(ctx, hrefWith(`/console/contacts/${contact.id}`, { done: `${contact.email} is added.` }));
}

async function editPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  show(ctx, session, { title: `Edit ${c.email}`, active: ACTIVE, body: card(contactForm(session, c)) });
}

async function editAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  const fields = {
    firstName: nameOf(form, 'first_name', 'First name'),
    lastName: nameOf(form, 'last_name', 'Last name'),
    unsubscribed: form.get('subscribed') !== 'on',
  };
  if (!(await updateContact(ctx.deps.sql, session.org_id, c.id, fields))) throw notFound('Contact');
  await audit(ctx, session, 'contact.updated', { type: 'contact', id: c.id }, { unsubscribed: fields.unsubscribed });
  redirect(ctx, hrefWith(`/console/contacts/${c.id}`, { done: 'Contact saved.' }));
}

async function unsubscribeConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  if (c.unsubscribed) throw new ApiError('invalid_state', `${c.email} is unsubscribed already`);
  confirmPage(ctx, session, {
    title: 'Unsubscribe this contact?',
    active: ACTIVE,
    question: html`<strong>${c.email}</strong> receives no more broadcasts (transactional mail still reaches it). You
      can subscribe it again by editing it.`,
    action: `/console/contacts/${c.id}/unsubscribe`,
    confirmLabel: 'Unsubscribe',
    back: `/console/contacts/${c.id}`,
  });
}

async function unsubscribeAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  if (!(await updateContact(ctx.deps.sql, session.org_id, c.id, { unsubscribed: true }))) throw notFound('Contact');
  await audit(ctx, session, 'contact.updated', { type: 'contact', id: c.id }, { unsubscribed: true });
  redirect(ctx, hrefWith(`/console/contacts/${c.id}`, { done: `${c.email} is unsubscribed.` }));
}

async function deleteConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  confirmPage(ctx, session, {
    title: 'Delete this contact?',
    active: ACTIVE,
    question: html`<strong>${c.email}</strong>, its properties and its topic subscriptions are deleted; its place in
      running automations ends. Mail already sent to it stays in the email list.`,
    action: `/console/contacts/${c.id}/delete`,
    confirmLabel: 'Delete contact',
    back: `/console/contacts/${c.id}`,
    danger: true,
  });
}

async function deleteAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const c = await loadContact(ctx, session);
  if (!(await deleteContact(ctx.deps.sql, session.org_id, c.id))) throw notFound('Contact');
  await audit(ctx, session, 'contact.deleted', { type: 'contact', id: c.id });
  redirect(ctx, hrefWith('/console/contacts', { done: `${c.email} is deleted.` }));
}

/** The contact page's buttons (admins). */
export function contactActions(session: SessionRow, c: ContactRow): Safe {
  if (session.role !== 'admin') return html``;
  return html`<a class="btn" href="/console/contacts/${c.id}/edit">Edit</a>
    ${c.unsubscribed ? '' : html`<a class="btn" href="/console/contacts/${c.id}/unsubscribe">Unsubscribe…</a>`}
    <a class="btn danger" href="/console/contacts/${c.id}/delete">Delete…</a>`;
}

/** Before `/contacts/:id`, so that `new` is not taken for an id. */
export const CONTACT_EDIT_PAGES: PageRule[] = [
  { method: 'GET', path: '/contacts/new', role: 'admin', page: newPage },
  { method: 'POST', path: '/contacts', role: 'admin', page: createAction },
  { method: 'GET', path: '/contacts/:id/edit', role: 'admin', page: editPage },
  { method: 'POST', path: '/contacts/:id/edit', role: 'admin', page: editAction },
  { method: 'GET', path: '/contacts/:id/unsubscribe', role: 'admin', page: unsubscribeConfirm },
  { method: 'POST', path: '/contacts/:id/unsubscribe', role: 'admin', page: unsubscribeAction },
  { method: 'GET', path: '/contacts/:id/delete', role: 'admin', page: deleteConfirm },
  { method: 'POST', path: '/contacts/:id/delete', role: 'admin', page: deleteAction },
];
