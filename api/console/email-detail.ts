// One message: its headers, tags, key, template and version; per recipient its state, why it
// waits (in plain words), and a timeline of every event with the SMTP reply, MX host, TLS and
// attempt number the delivery worker recorded; the content (./email-content.ts) and the
// actions an admin may take (./email-actions.ts).
import {
  listAllEmailEvents,
  listAttachmentMeta,
  listRecipientDetails,
  type AttachmentMeta,
  type RecipientDetail,
} from '../../shared/db/email-detail.js';
import type { EmailRow } from '../../shared/db/emails.js';
import { getKey } from '../../shared/db/keys.js';
import { emailState } from '../../shared/db/email-search.js';
import { suppressionsOf, type SuppressionRow } from '../../shared/db/suppressions.js';
import type { SessionRow } from '../../shared/db/users.js';
import type { EventRow } from '../../shared/events.js';
import type { ApiContext } from '../types.js';
import { contentCard, messageParts } from './email-content.js';
import { cancelable, loadOrgEmail } from './email-load.js';
import { html, when, type Safe } from './html.js';
import { show, type ConsoleRequest } from './respond.js';
import { badge, card, details, emptyState, stateBadge } from './ui.js';
import { explainWait } from './waits.js';

function list(values: string[]): string | null {
  return values.length ? values.join(', ') : null;
}

function tags(e: EmailRow): Safe | null {
  if (!e.tags.length) return null;
  return html`<span class="tags">${e.tags.map((t) => html`<span class="tag">${t.name}=${t.value}</span>`)}</span>`;
}

function headerList(h: Record<string, string>): Safe | null {
  const entries = Object.entries(h);
  if (!entries.length) return null;
  return html`${entries.map(([k, v]) => html`<div><code>${k}: ${v}</code></div>`)}`;
}

function attachmentList(a: AttachmentMeta[]): Safe | null {
  if (!a.length) return null;
  return html`${a.map((x) => html`<div>${x.filename} <span class="muted">(${x.content_type ?? 'unknown type'}, ${x.size} bytes)</span></div>`)}`;
}

function messageCard(e: EmailRow, keyName: string | null, attachments: AttachmentMeta[]): Safe {
  const key = e.key_id
    ? html`${keyName ?? 'deleted key'} <code class="muted">${e.key_id}</code>`
    : html`<span class="muted">none (${e.source})</span>`;
  const template = e.template_id
    ? html`${e.template_slug ?? e.template_id}${e.template_version ? html` version ${e.template_version}` : ''}
        <code class="muted">${e.template_id}</code>`
    : null;
  return card(
    details([
      ['From', e.from_address],
      ['To', list(e.to_addresses)],
      ['Cc', list(e.cc_addresses)],
      ['Bcc', list(e.bcc_addresses)],
      ['Reply-To', list(e.reply_to)],
      ['Subject', e.subject],
      ['Created', when(e.created_at)],
      ['Scheduled for', e.scheduled_at ? when(e.scheduled_at) : null],
      ['Message-ID', html`<code>&lt;${e.message_id}&gt;</code>`],
      ['Source', e.source],
      ['API key', key],
      [
        'API request',
        e.source === 'api' && e.key_id
          ? html`<a href="/console/logs?email=${e.id}" data-request-log>The request that made it</a>`
          : null,
      ],
      ['Template', template],
      ['Kind', e.kind],
      ['Tags', tags(e)],
      ['Headers', headerList(e.headers)],
      ['Attachments', attachmentList(attachments)],
    ]),
    { title: 'Message' },
  );
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null;
}

/** An attempt's TLS: `TLS TLSv1.3 (TLS_AES_256_GCM_SHA384) · MTA-STS enforce`, `no TLS · opportunistic`. */
function tlsFact(v: unknown): Safe | null {
  if (typeof v === 'boolean') return html`<span>TLS ${v ? 'yes' : 'no'}</span>`;
  if (typeof v !== 'object' || v === null) return null;
  const t = v as { version?: unknown; cipher?: unknown; policy?: unknown; mode?: unknown };
  const session = str(t.version)
    ? html`<span data-tls>TLS ${str(t.version)}${str(t.cipher) ? html` (<code>${str(t.cipher)}</code>)` : ''}</span>`
    : html`<span data-tls>no TLS</span>`;
  const policy = [str(t.policy) && t.policy !== 'none' ? String(t.policy).toUpperCase() : null, str(t.mode)];
  return html`${session} · <span data-tls-policy>${policy.filter(Boolean).join(' ')}</span>`;
}

/** The facts of one event: attempt, SMTP reply, MX host, TLS (recorded by the delivery worker), detail. */
function eventFacts(ev: EventRow): Safe {
  const d = ev.data ?? {};
  const facts: Safe[] = [];
  const attempt = str(d.attempt);
  if (attempt) facts.push(html`<span>attempt ${attempt}</span>`);
  const host = str(d.mx_host);
  if (host) facts.push(html`<span>MX host <code>${host}</code></span>`);
  const tls = tlsFact(d.tls);
  if (tls) facts.push(tls);
  if (ev.bounce_type) facts.push(html`<span>${ev.bounce_type} bounce</span>`);
  if (ev.detail) facts.push(html`<span>${ev.detail}</span>`);
  if (ev.blocked) facts.push(html`<span>provider block or throttle</span>`);
  if (ev.url) facts.push(html`<span>link <code>${ev.url}</code></span>`);
  const reply = str(d.response);
  return html`${facts.length ? html`<div class="ev-facts">${facts.map((f, i) => html`${i ? ' · ' : ''}${f}`)}</div>` : ''}
  ${reply ? html`<div class="ev-facts">SMTP reply: <code>${reply}</code></div>` : ''}`;
}

function timeline(events: EventRow[]): Safe {
  if (!events.length) return html`<p class="muted">No events yet.</p>`;
  return html`<ol class="timeline">
    ${events.map(
      (ev) =>
        html`<li data-event="${ev.type}">
          <div class="ev-head">${stateBadge(ev.type.replace(/^email\./, ''))} ${when(ev.created_at)}</div>
          ${eventFacts(ev)}
        </li>`,
    )}
  </ol>`;
}

export interface DetailContext {
  session: SessionRow;
  email: EmailRow;
  suppressions: SuppressionRow[];
}

function recipientActions(c: DetailContext, r: RecipientDetail): Safe {
  if (c.session.role !== 'admin') return html``;
  const base = `/console/emails/${c.email.id}/recipients/${r.id}`;
  const retry =
    r.status === 'delivery_delayed' && !r.attempt_started_at
      ? html`<a class="btn small" href="${base}/retry">Retry now</a>`
      : '';
  const suppressed = c.suppressions.some((s) => s.email === r.email);
  const unsuppress = suppressed ? html`<a class="btn small" href="${base}/unsuppress">Remove suppression</a>` : '';
  return html`${retry}${unsuppress}`;
}

function recipientBlock(c: DetailContext, r: RecipientDetail, events: EventRow[]): Safe {
  const wait = explainWait(r, { paused: c.session.sending_paused, reason: c.session.sending_paused_reason });
  const supp = c.suppressions.filter((s) => s.email === r.email);
  return html`<section class="recipient" data-recipient="${r.email}" aria-label="Recipient ${r.email}">
    <div class="recipient-head">
      <h3>${r.address}</h3>
      ${stateBadge(r.status)}
      <span class="muted"
        >${r.field.replace(/^./, (c) => c.toUpperCase())} · ${r.attempts} attempt${r.attempts === 1 ? '' : 's'}</span
      >
      ${supp.length ? badge(`suppressed (${supp.map((s) => s.reason).join(', ')})`, 'bad') : ''}
      ${recipientActions(c, r)}
    </div>
    ${wait ? html`<p class="wait" data-wait>${wait}</p>` : ''}
    ${r.last_response ? html`<p class="ev-facts">Last reply: <code>${r.last_response}</code></p>` : ''}
    ${timeline(events)}
  </section>`;
}

function recipientsCard(c: DetailContext, recipients: RecipientDetail[], events: EventRow[]): Safe {
  const body = recipients.length
    ? html`${recipients.map((r) =>
        recipientBlock(
          c,
          r,
          events.filter((e) => e.recipient_id === r.id),
        ),
      )}`
    : emptyState('No recipients.', 'This message was stored without recipients.');
  const other = events.filter((e) => !e.recipient_id);
  return card(
    html`${body}${
      other.length
        ? html`<h3>Message events</h3>
            ${timeline(other)}`
        : ''
    }`,
    {
      title: 'Recipients and events',
    },
  );
}

export async function emailDetailPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const { sql } = ctx.deps;
  const email = await loadOrgEmail(ctx, session);
  const [recipients, events, attachments, key, parts] = await Promise.all([
    listRecipientDetails(sql, email.id),
    listAllEmailEvents(sql, email.id),
    listAttachmentMeta(sql, email.id),
    email.key_id ? getKey(sql, session.org_id, email.key_id) : Promise.resolve(null),
    messageParts(email, ctx.deps.config),
  ]);
  const suppressions = await suppressionsOf(
    sql,
    session.org_id,
    email.domain_id,
    recipients.map((r) => r.email),
  );
  const c: DetailContext = { session, email, suppressions };
  const cancel =
    session.role === 'admin' && cancelable(email)
      ? html`<a class="btn danger" href="/console/emails/${email.id}/cancel">Cancel email</a>`
      : '';
  show(ctx, session, {
    title: email.subject || '(no subject)',
    active: '/console/emails',
    actions: html`<a class="btn" href="/console/emails${email.mode === 'test' ? '?mode=test' : ''}">All emails</a
      >${cancel}`,
    lead: html`<code>${email.id}</code> ${stateBadge(emailState(email.status, email.last_event))}
      ${email.mode === 'test' ? badge('test mode', 'info') : badge('live', 'neutral')}`,
    body: html`<div class="grid-2">
        ${messageCard(email, key?.name ?? null, attachments)} ${recipientsCard(c, recipients, events)}
      </div>
      ${contentCard(email, parts, ctx.query.images === '1')}`,
  });
}
