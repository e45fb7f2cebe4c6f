// Resend's broadcast merge tags in a broadcast's own subject, html and text (DESIGN §21):
// `{{{FIRST_NAME|there}}}`, `{{{LAST_NAME}}}`, `{{{EMAIL}}}`, `{{{RESEND_UNSUBSCRIBE_URL}}}` and
// `{{{<property>|fallback}}}` for any property of the contact, rendered per contact by the
// broadcast worker. Whatever else opens with `{{` is refused when the broadcast is written, so a
// tag Tern cannot render is never sent as written. (Templates have their own engine:
// shared/templates.ts.)
import type { ContactFields } from './contact-email.js';
import { validationError } from './errors.js';

const TAG = /\{\{\{\s*([A-Za-z][A-Za-z0-9_]{0,63})\s*(?:\|([^{}|]{0,500}))?\}\}\}/g;

/** The names that are not properties: each with the contact field it reads. */
const FIELDS: Record<string, 'first_name' | 'last_name' | 'email' | 'id'> = {
  FIRST_NAME: 'first_name',
  LAST_NAME: 'last_name',
  EMAIL: 'email',
  CONTACT_ID: 'id',
};
const UNSUBSCRIBE = new Set(['RESEND_UNSUBSCRIBE_URL', 'UNSUBSCRIBE_URL']);

export const MERGE_TAG_HELP =
  'use {{{FIRST_NAME|fallback}}}, {{{LAST_NAME|fallback}}}, {{{EMAIL}}}, {{{RESEND_UNSUBSCRIBE_URL}}} ' +
  'or {{{<property>|fallback}}}';

/** Throws a 422 naming the first `{{` of `source` that is not a merge tag. */
export function checkMergeTags(source: string | null, where: string): void {
  if (source === null) return;
  const rest = source.replace(TAG, '');
  const at = rest.indexOf('{{');
  if (at === -1) return;
  const close = /\}{2,}/.exec(rest.slice(at));
  const end = close ? at + close.index + close[0].length : -1;
  const snippet = end === -1 || end - at > 60 ? `${rest.slice(at, at + 40)}…` : rest.slice(at, end);
  throw validationError(`${where}: ${JSON.stringify(snippet)} is not a merge tag Tern can render; ${MERGE_TAG_HELP}`);
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function property(properties: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(properties, name)) return properties[name];
  const lower = name.toLowerCase();
  const key = Object.keys(properties).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : properties[key];
}

/**
 * `source` with each merge tag replaced by the contact's value, or its fallback when the contact
 * has none (empty without one). Values are HTML-escaped in html, as written elsewhere.
 */
export function renderMergeTags(
  source: string | null,
  contact: ContactFields,
  unsubscribeUrl: string | null,
  html: boolean,
): string | null {
  if (source === null || !source.includes('{{{')) return source;
  return source.replace(TAG, (_tag, name: string, fallback: string | undefined) => {
    const upper = name.toUpperCase();
    let value: unknown;
    if (UNSUBSCRIBE.has(upper)) {
      if (unsubscribeUrl === null)
        throw new Error(`{{{${name}}}} needs an unsubscribe URL, which this message has not`);
      value = unsubscribeUrl;
    } else {
      const field = FIELDS[upper];
      value = field ? contact[field] : property(contact.properties ?? {}, name);
    }
    const given = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    const text = given && value !== '' ? String(value) : (fallback ?? '').trim();
    return html ? escapeHtml(text) : text;
  });
}
