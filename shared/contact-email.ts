// One message to one contact, as the rows POST /emails stores (shared/db/emails.ts): used by
// broadcasts and automation send steps. A template is rendered per contact with the contact's
// fields (email, first_name, last_name, contact_id, and every property) as variables, converted
// to the type each variable declares. Without a template, Resend's merge tags in the message's
// own subject, html and text are rendered with the contact (shared/merge-tags.ts).
import type { ContactRow } from './db/contacts.js';
import type { NewRecipient } from './db/emails.js';
import { buildEmailRow } from './email-row.js';
import type { TemplateVersionRow } from './db/templates.js';
import { newId } from './ids.js';
import type { Mode } from './keys.js';
import { parseMailbox } from './mail/addresses.js';
import { unsubscribeUrl } from './mail/tracking-links.js';
import { renderMergeTags } from './merge-tags.js';
import { renderTemplate, type VariableValue } from './templates.js';

export type ContactFields = Pick<ContactRow, 'id' | 'email' | 'first_name' | 'last_name' | 'properties'>;

/** The contact as template values, each converted to its declared type where it can be. */
export function contactVariables(
  contact: ContactFields,
  declared: TemplateVersionRow['variables'],
  extra: Record<string, unknown> = {},
): Record<string, VariableValue> {
  const raw: Record<string, unknown> = {
    ...contact.properties,
    ...extra,
    email: contact.email,
    first_name: contact.first_name,
    last_name: contact.last_name,
    contact_id: contact.id,
  };
  const out: Record<string, VariableValue> = {};
  for (const v of declared) {
    const value = Object.hasOwn(raw, v.key) ? raw[v.key] : undefined;
    if (value === undefined || value === null) continue;
    if (v.type === 'string' && (typeof value === 'number' || typeof value === 'boolean')) out[v.key] = String(value);
    else if (v.type === 'number' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
      out[v.key] = Number(value);
    else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[v.key] = value;
  }
  return out;
}

export interface ContactMessage {
  orgId: string;
  keyId: string | null;
  mode: Mode;
  source: 'broadcast' | 'automation';
  domain: { id: string; name: string };
  /** As stored: "Name <addr>" or a bare address. */
  from: string;
  replyTo: string[];
  subject: string | null;
  html: string | null;
  text: string | null;
  /** Hidden preheader text put first in the HTML body. */
  previewText?: string | null;
  kind: string;
  topicId: string | null;
  tags: { name: string; value: string }[];
  template: TemplateVersionRow | null;
  /** Where `{{{RESEND_UNSUBSCRIBE_URL}}}` points (the install's base URL and link secret). */
  links?: { baseUrl: string; secret: string };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function withPreheader(html: string | null, preview: string | null | undefined): string | null {
  if (html === null || !preview) return html;
  const div = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(preview)}</div>`;
  const body = /<body[^>]*>/i.exec(html);
  return body ? html.slice(0, body.index + body[0].length) + div + html.slice(body.index + body[0].length) : div + html;
}

/**
 * The rows of one message to the contact. Throws (a validation error naming the variable) when
 * the template cannot be rendered with this contact's values.
 */
export function buildContactEmail(m: ContactMessage, contact: ContactFields, extra: Record<string, unknown> = {}) {
  const id = newId('em');
  const recipientId = newId('rcp');
  const unsubscribe = m.links ? unsubscribeUrl({ ...m.links, emailId: id, recipientId }) : null;
  const merge = (source: string | null, html: boolean) => renderMergeTags(source, contact, unsubscribe, html);
  const parts = m.template
    ? renderTemplate(m.template, contactVariables(contact, m.template.variables, extra), 'template.variables')
    : { subject: null, html: merge(m.html, true), text: merge(m.text, false) };
  // A value with a line break must not split the Subject header.
  const subject = (merge(m.subject, false) ?? parts.subject ?? '').replace(/[\r\n]+/g, ' ');
  const from = parseMailbox(m.from);
  if (!from.ok) throw new Error(`stored from address ${m.from} does not parse: ${from.reason}`);
  const email = buildEmailRow({
    id,
    orgId: m.orgId,
    keyId: m.keyId,
    mode: m.mode,
    domain: m.domain,
    source: m.source,
    from: { address: m.from, email: from.mailbox.email },
    to: [contact.email],
    replyTo: m.replyTo,
    subject,
    html: withPreheader(parts.html, merge(m.previewText ?? null, false)),
    text: parts.text,
    tags: m.tags,
    kind: m.kind,
    topicId: m.topicId,
    template: m.template ? { id: m.template.template_id, slug: m.template.slug, version: m.template.version } : null,
  });
  const recipient: NewRecipient = {
    id: recipientId,
    email_id: id,
    org_id: m.orgId,
    field: 'to',
    address: contact.email,
    email: contact.email.toLowerCase(),
    domain: contact.email.slice(contact.email.lastIndexOf('@') + 1).toLowerCase(),
    status: 'queued',
    wait_reason: null,
  };
  return { email, recipient };
}
