// The row of one message to send (NewEmail, shared/db/emails.ts), built in one place for every
// way a message comes in: POST /emails and /emails/batch, the SMTP relay, broadcasts and
// automation steps. What a source leaves out takes its one default here.
import type { NewEmail } from './db/emails.js';
import type { Mode } from './keys.js';
import { defaultStream, type Stream } from './streams.js';

export interface EmailFields {
  id: string;
  orgId: string;
  keyId: string | null;
  mode: Mode;
  /** The sending domain (the From address's). */
  domain: { id: string; name: string };
  source?: NonNullable<NewEmail['source']>;
  /** The delivery stream; default: the one the source implies (shared/streams.ts). */
  stream?: Stream;
  /** The From mailbox as it is written ("Name <addr>") and its bare address. */
  from: { address: string; email: string };
  to: string[];
  cc?: string[];
  bcc?: string[];
  replyTo?: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers?: Record<string, string>;
  tags?: { name: string; value: string }[];
  kind?: string | null;
  topicId?: string | null;
  template?: { id: string; slug: string | null; version: number | null } | null;
  /** Default `<id>@<domain>`: replies and bounces are threaded by it. */
  messageId?: string;
  /** A future time makes the message `scheduled`; without one it is `queued` at once. */
  scheduledAt?: Date | null;
  /** The message as its SMTP client wrote it (the relay's), or as received (a forward's). */
  rawMime?: Buffer | null;
  /** MAIL FROM of every recipient (a forward's SRS address); default: each recipient's VERP address. */
  envelopeFrom?: string | null;
}

export function buildEmailRow(f: EmailFields): NewEmail {
  return {
    id: f.id,
    org_id: f.orgId,
    key_id: f.keyId,
    domain_id: f.domain.id,
    mode: f.mode,
    source: f.source ?? 'api',
    stream: f.stream ?? defaultStream(f.source ?? 'api'),
    from_address: f.from.address,
    from_email: f.from.email,
    to_addresses: f.to,
    cc_addresses: f.cc ?? [],
    bcc_addresses: f.bcc ?? [],
    reply_to: f.replyTo ?? [],
    subject: f.subject,
    html: f.html,
    text: f.text,
    headers: f.headers ?? {},
    tags: f.tags ?? [],
    kind: f.kind ?? null,
    topic_id: f.topicId ?? null,
    template_id: f.template?.id ?? null,
    template_slug: f.template?.slug ?? null,
    template_version: f.template?.version ?? null,
    message_id: f.messageId ?? `${f.id}@${f.domain.name}`,
    status: f.scheduledAt ? 'scheduled' : 'queued',
    scheduled_at: f.scheduledAt ?? null,
    raw_mime: f.rawMime ?? null,
    envelope_from: f.envelopeFrom ?? null,
  };
}
