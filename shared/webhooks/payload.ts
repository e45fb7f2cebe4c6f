// Webhook bodies (SPEC "Events", DESIGN §6): the envelope `{type, created_at, data}` with the
// data fields in the spec's order, then `stream` (DESIGN §14: `transactional` or `broadcast`).
// `kind` and `tags` are always present (null when empty);
// `bounce_type`, `detail` and `url` only where they apply and have a value. The bytes built here
// are stored with the delivery and sent unchanged on every attempt. Organization events
// (organization.*, webhook.disabled, domain.*) carry the fields recorded with them.
import type { EventForWebhook } from '../db/webhook-events.js';
import { isOrgEventType, type OrgEventType } from '../events.js';

type Tag = { name: string; value: string };

export type EmailEventData = {
  email_id: string;
  from: string;
  to: string[];
  subject: string;
  recipient: string;
  kind: string | null;
  tags: Tag[] | { template: { id: string; slug: string | null; version: number | null }; tags: Tag[] } | null;
  stream: 'transactional' | 'broadcast';
  bounce_type?: string;
  detail?: string;
  url?: string;
  /** email.opened / email.clicked (DESIGN §20): a machine's hit, and why. */
  machine?: boolean;
  machine_reason?: string | null;
};

export type ReceivedEventData = {
  inbound_id: string;
  email_id?: string;
  from: string;
  to: string[];
  subject: string;
  stripped_text?: string;
  mailbox_hash?: string;
  auth?: { spf: string; dkim: string; dmarc: string };
  attachments?: { id: string; filename: string | null; content_type: string; size: number }[];
  /** With RSPAMD_URL (DESIGN §20): rspamd's verdict, or {status: "unchecked"}. */
  spam?: { score: number; action: string; symbols: { name: string; score: number }[] } | { status: 'unchecked' };
};

/** Organization events: the fields recorded with the event (shared/org-events.ts), nulls left out. */
export type OrgEventData = { organization_id: string } & Record<string, unknown>;

export interface WebhookEnvelope {
  type: string;
  created_at: string;
  data: EmailEventData | ReceivedEventData | OrgEventData;
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

/** What the web process judged (shared/tracking.ts); a hit recorded without a judgement is a person's. */
function machineOf(v: unknown): Pick<EmailEventData, 'machine' | 'machine_reason'> {
  const d = (typeof v === 'string' ? JSON.parse(v) : (v ?? {})) as Record<string, unknown>;
  const reason = typeof d.machine_reason === 'string' ? d.machine_reason : null;
  return { machine: d.machine === true, machine_reason: reason };
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
    stream: ev.email_stream === 'broadcast' ? 'broadcast' : 'transactional',
  };
  if (ev.type === 'email.bounced' && present(ev.bounce_type)) data.bounce_type = ev.bounce_type;
  if (present(ev.detail)) data.detail = ev.detail;
  if (ev.type === 'email.clicked' && present(ev.url)) data.url = ev.url;
  if (ev.type === 'email.opened' || ev.type === 'email.clicked') Object.assign(data, machineOf(ev.data));
  return data;
}

function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function authOf(v: unknown): ReceivedEventData['auth'] | undefined {
  const a = v as Record<string, unknown> | null;
  if (!a || typeof a !== 'object') return undefined;
  const word = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : 'none');
  return { spf: word('spf'), dkim: word('dkim'), dmarc: word('dmarc') };
}

function attachmentsOf(v: unknown): NonNullable<ReceivedEventData['attachments']> {
  if (!Array.isArray(v)) return [];
  return v.map((a: Record<string, unknown>) => ({
    id: typeof a.id === 'string' ? a.id : '',
    filename: typeof a.filename === 'string' ? a.filename : null,
    content_type: typeof a.content_type === 'string' ? a.content_type : 'application/octet-stream',
    size: Number(a.size ?? 0),
  }));
}

/**
 * email.received reads what the inbound worker recorded in the event: inbound_id and email_id
 * columns, and `data.{from, to, subject, stripped_text, mailbox_hash, auth, attachments}`; the
 * fields without a value are left out (SPEC "Payloads omit fields with no value").
 */
function receivedData(ev: EventForWebhook): ReceivedEventData {
  // Tolerates data stored as a JSON string (jsonb string) as well as an object.
  const d = (typeof ev.data === 'string' ? JSON.parse(ev.data) : (ev.data ?? {})) as Record<string, unknown>;
  const auth = authOf(d.auth);
  const attachments = attachmentsOf(d.attachments);
  return {
    inbound_id: ev.inbound_id ?? (typeof d.inbound_id === 'string' ? d.inbound_id : ''),
    ...(present(ev.email_id) ? { email_id: ev.email_id } : {}),
    from: typeof d.from === 'string' ? d.from : '',
    to: strings(d.to),
    subject: typeof d.subject === 'string' ? d.subject : '',
    ...(typeof d.stripped_text === 'string' && d.stripped_text !== '' ? { stripped_text: d.stripped_text } : {}),
    ...(present(d.mailbox_hash as string | null) ? { mailbox_hash: d.mailbox_hash as string } : {}),
    ...(auth ? { auth } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
    ...(d.spam && typeof d.spam === 'object' ? { spam: d.spam as NonNullable<ReceivedEventData['spam']> } : {}),
  };
}

/** The recorded data with `organization_id` first and the fields without a value left out. */
function orgData(ev: EventForWebhook): OrgEventData {
  const d = (typeof ev.data === 'string' ? JSON.parse(ev.data) : (ev.data ?? {})) as Record<string, unknown>;
  const out: OrgEventData = { organization_id: ev.org_id };
  for (const [k, v] of Object.entries(d)) {
    if (k !== 'organization_id' && v !== null && v !== undefined && v !== '') out[k] = v;
  }
  return out;
}

export function buildEnvelope(ev: EventForWebhook): WebhookEnvelope {
  return {
    type: ev.type,
    created_at: ev.created_at.toISOString(),
    data: isOrgEventType(ev.type) ? orgData(ev) : ev.type === 'email.received' ? receivedData(ev) : emailData(ev),
  };
}

const ORG_SAMPLES: Record<OrgEventType, Record<string, unknown>> = {
  'organization.paused': {
    reason: 'alert rule: bounce rate 6.00% reached the 5% threshold over 1 day(s) (6 of 100 sent)',
    by: { type: 'alert_rule', metric: 'bounce', threshold: 5 },
  },
  'organization.resumed': { by: { type: 'key', id: 'key_00000000000000000000000000' } },
  'webhook.disabled': {
    webhook_id: 'wh_00000000000000000000000000',
    url: 'https://example.com/webhooks',
    reason: 'failing continuously since 2026-01-01T00:00:00Z',
  },
  'domain.failed': {
    domain_id: 'dom_00000000000000000000000000',
    domain: 'example.com',
    records: [{ record: 'DKIM', name: 'tern._domainkey.example.com', reason: 'No DKIM TXT record found' }],
  },
  'domain.verified': { domain_id: 'dom_00000000000000000000000000', domain: 'example.com' },
  'ip.listed': { ip: '192.0.2.10', pool: 'bulk', zones: [{ zone: 'zen.spamhaus.org', answer: '127.0.0.2' }] },
  'ip.delisted': { ip: '192.0.2.10', pool: 'bulk' },
  'domain.listed': {
    domain_id: 'dom_00000000000000000000000000',
    domain: 'example.com',
    zones: [{ zone: 'dbl.spamhaus.org', answer: '127.0.1.2' }],
  },
  'domain.delisted': { domain_id: 'dom_00000000000000000000000000', domain: 'example.com' },
};

export function serialise(envelope: WebhookEnvelope): Buffer {
  return Buffer.from(JSON.stringify(envelope), 'utf8');
}

/** A sample of `type` for POST /webhooks/{id}/test: realistic values, marked as a test. */
export function sampleEnvelope(type: string, eventId: string, now = new Date()): WebhookEnvelope {
  if (isOrgEventType(type)) {
    return {
      type,
      created_at: now.toISOString(),
      data: { organization_id: 'org_00000000000000000000000000', ...ORG_SAMPLES[type] },
    };
  }
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
    data: {
      from: 'Someone <someone@example.com>',
      to: ['support+ticket-1234@reply.example.com'],
      subject: 'Re: Test webhook',
      stripped_text: 'Thanks, that works for me.',
      mailbox_hash: 'ticket-1234',
      auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
      attachments: [],
    },
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
    email_stream: 'transactional',
    email_tags: [{ name: 'source', value: 'webhook-test' }],
    email_template_id: null,
    email_template_slug: null,
    email_template_version: null,
    recipient_email: 'delivered@example.com',
  });
}
