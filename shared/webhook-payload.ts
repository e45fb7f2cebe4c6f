// Webhook bodies (SPEC "Events", DESIGN §6): the envelope `{type, created_at, data}` with the
// data fields in the spec's order. `kind` and `tags` are always present (null when empty);
// `bounce_type`, `detail` and `url` only where they apply and have a value. The bytes built here
// are stored with the delivery and sent unchanged on every attempt.
import type { EventForWebhook } from './db/webhook-events.js';

type Tag = { name: string; value: string };

export type EmailEventData = {
  email_id: string;
  from: string;
  to: string[];
  subject: string;
  recipient: string;
  kind: string | null;
  tags: Tag[] | { template: { id: string; slug: string | null; version: number | null }; tags: Tag[] } | null;
  bounce_type?: string;
  detail?: string;
  url?: string;
};

export type ReceivedEventData = {
  inbound_id: string;
  email_id?: string;
  from: string;
  to: string[];
  subject: string;
};

export interface WebhookEnvelope {
  type: string;
  created_at: string;
  data: EmailEventData | ReceivedEventData;
}

function present(v: string | null | undefined): v is string {
  return typeof v === 'string' && v !== '';
}

function tagsOf(ev: EventForWebhook): EmailEventData['tags'] {
  const tags = Array.isArray(ev.email_tags) ? ev.email_tags.map((t) => ({ name: t.name, value: t.value })) : [];
  if (ev.email_template_id) {
    return {
      template: { id: ev.email_template_id, slug: ev.email_template_slug, version: ev.email_template_version },
      tags,
    };
  }
  return tags.length > 0 ? tags : null;
}

function emailData(ev: EventForWebhook): EmailEventData {
  const data: EmailEventData = {
    email_id: ev.email_id ?? '',
    from: ev.email_from ?? '',
    to: ev.email_to ?? [],
    subject: ev.email_subject ?? '',
    recipient: ev.recipient ?? ev.recipient_email ?? '',
    kind: present(ev.email_kind) ? ev.email_kind : present(ev.kind) ? ev.kind : null,
    tags: tagsOf(ev),
  };
  if (ev.type === 'email.bounced' && present(ev.bounce_type)) data.bounce_type = ev.bounce_type;
  if (present(ev.detail)) data.detail = ev.detail;
  if (ev.type === 'email.clicked' && present(ev.url)) data.url = ev.url;
  return data;
}

function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * email.received reads what the inbound worker recorded in the event: inbound_id and email_id
 * columns, and `data.{from, to, subject}`.
 */
function receivedData(ev: EventForWebhook): ReceivedEventData {
  // Tolerates data stored as a JSON string (jsonb string) as well as an object.
  const d = (typeof ev.data === 'string' ? JSON.parse(ev.data) : (ev.data ?? {})) as Record<string, unknown>;
  return {
    inbound_id: ev.inbound_id ?? (typeof d.inbound_id === 'string' ? d.inbound_id : ''),
    ...(present(ev.email_id) ? { email_id: ev.email_id } : {}),
    from: typeof d.from === 'string' ? d.from : '',
    to: strings(d.to),
    subject: typeof d.subject === 'string' ? d.subject : '',
  };
}

export function buildEnvelope(ev: EventForWebhook): WebhookEnvelope {
  return {
    type: ev.type,
    created_at: ev.created_at.toISOString(),
    data: ev.type === 'email.received' ? receivedData(ev) : emailData(ev),
  };
}

export function serialise(envelope: WebhookEnvelope): Buffer {
  return Buffer.from(JSON.stringify(envelope), 'utf8');
}

/** A sample of `type` for POST /webhooks/{id}/test: realistic values, marked as a test. */
export function sampleEnvelope(type: string, eventId: string, now = new Date()): WebhookEnvelope {
  const base = {
    id: eventId,
    org_id: '',
    mode: 'test' as const,
    type: type as EventForWebhook['type'],
    email_id: 'em_00000000000000000000000000',
    recipient_id: null,
    inbound_id: type === 'email.received' ? 'inb_00000000000000000000000000' : null,
    recipient: 'delivered@example.com',
    bounce_type: type === 'email.bounced' ? ('hard' as const) : null,
    detail:
      type === 'email.bounced'
        ? 'NoEmail'
        : type === 'email.delivery_delayed'
          ? 'MailboxFull'
          : type === 'email.failed'
            ? 'Test failure'
            : null,
    url: type === 'email.clicked' ? 'https://example.com/' : null,
    domain_id: null,
    key_id: null,
    template_id: null,
    kind: null,
    provider: null,
    blocked: false,
    data: { from: 'Someone <someone@example.com>', to: ['reply@reply.example.com'], subject: 'Re: Test webhook' },
    dedupe_key: eventId,
    published_at: null,
    created_at: now,
  };
  return buildEnvelope({
    ...base,
    email_from: 'Tern <webhooks@example.com>',
    email_to: ['delivered@example.com'],
    email_subject: 'Test webhook',
    email_kind: 'test',
    email_tags: [{ name: 'source', value: 'webhook-test' }],
    email_template_id: null,
    email_template_slug: null,
    email_template_version: null,
    recipient_email: 'delivered@example.com',
  });
}
