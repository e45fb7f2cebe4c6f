// Inbound messages: raw storage by the MX / HTTP intake, parsed fields by the inbound worker.
import { newId } from '../ids.js';
import type { Db } from './pool.js';
import { unnestRows } from './unnest.js';
import { jsonParam } from './params.js';

export interface InboundRow {
  id: string;
  org_id: string | null;
  domain_id: string | null;
  source: 'mx' | 'http';
  kind: string | null;
  mail_from: string | null;
  rcpt_to: string[];
  remote_address: string | null;
  size: number;
  status: 'stored' | 'processed' | 'failed' | 'unparsed';
  error: string | null;
  from_address: string | null;
  to_addresses: string[];
  cc_addresses: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  headers: { key: string; value: string }[];
  message_id: string | null;
  in_reply_to: string | null;
  email_id: string | null;
  auto_reply: boolean;
  helo: string | null;
  mailbox_hash: string | null;
  stripped_text: string | null;
  auth: { spf: string; dkim: string; dmarc: string } | null;
  route: { match: string; action: string; forward_to?: string } | null;
  forward_email_id: string | null;
  created_at: Date;
  processed_at: Date | null;
}

export interface NewInbound {
  orgId: string | null;
  domainId: string | null;
  source: 'mx' | 'http';
  mailFrom: string | null;
  rcptTo: string[];
  remoteAddress: string | null;
  /** The client's EHLO name (the MX's; the HTTP intake's X-Tern-Helo). */
  helo?: string | null;
  raw: Buffer;
}

export async function insertInbound(db: Db, m: NewInbound): Promise<string> {
  const id = newId('inb');
  await db`
    insert into inbound_messages (id, org_id, domain_id, source, mail_from, rcpt_to, remote_address, helo, raw, size)
    values (${id}, ${m.orgId}, ${m.domainId}, ${m.source}, ${m.mailFrom}, ${m.rcptTo}, ${m.remoteAddress},
            ${m.helo ?? null}, ${m.raw}, ${m.raw.length})`;
  return id;
}

export async function loadInboundRaw(db: Db, id: string): Promise<(InboundRow & { raw: Buffer }) | null> {
  const [row] = await db<(InboundRow & { raw: Buffer })[]>`select * from inbound_messages where id = ${id}`;
  return row ?? null;
}

export interface ParsedInbound {
  orgId: string | null;
  domainId: string | null;
  kind: 'reply' | 'forward' | 'bounce' | 'complaint' | 'unsubscribe' | 'dmarc_report' | 'dropped' | 'spam';
  fromAddress: string | null;
  to: string[];
  cc: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  headers: { key: string; value: string }[];
  messageId: string | null;
  inReplyTo: string | null;
  emailId: string | null;
  autoReply: boolean;
  error?: string | null;
  attachments: ParsedAttachment[];
  strippedText?: string | null;
  mailboxHash?: string | null;
  auth?: { spf: string; dkim: string; dmarc: string } | null;
  route?: { match: string; action: string; forward_to?: string } | null;
  forwardEmailId?: string | null;
  /** rspamd's verdict (workers/inbound-spam.ts); null when no scorer is configured. */
  spam?: object | null;
}

export interface ParsedAttachment {
  /** `att_…`; given by the caller so that the event can name it in the same transaction. */
  id: string;
  filename: string | null;
  contentType: string;
  contentId: string | null;
  content: Buffer;
}

const INBOUND_ATTACHMENT_COLUMNS = {
  id: 'text',
  inbound_id: 'text',
  position: 'integer',
  filename: 'text',
  content_type: 'text',
  content_id: 'text',
  size: 'integer',
  content: 'bytea',
} as const;

/** Stores what the worker parsed; idempotent (attachments replaced) so a re-run is harmless. */
export async function saveParsedInbound(db: Db, id: string, p: ParsedInbound): Promise<void> {
  await db`
    update inbound_messages set
      org_id = coalesce(${p.orgId}, org_id), domain_id = coalesce(${p.domainId}, domain_id),
      kind = ${p.kind}, from_address = ${p.fromAddress}, to_addresses = ${p.to}, cc_addresses = ${p.cc},
      subject = ${p.subject}, text = ${p.text}, html = ${p.html}, headers = ${jsonParam(db, p.headers)},
      message_id = ${p.messageId}, in_reply_to = ${p.inReplyTo}, email_id = ${p.emailId},
      auto_reply = ${p.autoReply}, error = ${p.error ?? null}, status = 'processed', processed_at = now(),
      stripped_text = ${p.strippedText ?? null}, mailbox_hash = ${p.mailboxHash ?? null},
      auth = ${p.auth ? db.json(p.auth) : null}, route = ${p.route ? jsonParam(db, p.route) : null},
      forward_email_id = ${p.forwardEmailId ?? null}, spam = ${p.spam ? jsonParam(db, p.spam) : null}
    where id = ${id}`;
  await db`delete from inbound_attachments where inbound_id = ${id}`;
  if (p.attachments.length > 0) {
    const u = unnestRows(
      db,
      p.attachments.map((a, i) => ({
        id: a.id,
        inbound_id: id,
        position: i,
        filename: a.filename,
        content_type: a.contentType,
        content_id: a.contentId,
        size: a.content.length,
        content: a.content,
      })),
      INBOUND_ATTACHMENT_COLUMNS,
    );
    await db`insert into inbound_attachments (${u.columns}) ${u.select}`;
  }
}

/**
 * Locks a message's row for the transaction that stores its outcome; false when it is processed
 * already. A job can run twice at once (its lock lapsed while a long parse blocked the event loop,
 * and a worker took it over): the later run then waits here and does nothing, so a forward is
 * not sent twice and the attachment ids of the first run's `email.received` stay valid.
 */
export async function lockUnprocessedInbound(db: Db, id: string): Promise<boolean> {
  const [row] = await db<{ status: string }[]>`select status from inbound_messages where id = ${id} for update`;
  return row !== undefined && row.status !== 'processed';
}

export async function markInboundFailed(db: Db, id: string, error: string): Promise<void> {
  await db`update inbound_messages set status = 'failed', error = ${error}, processed_at = now() where id = ${id}`;
}

/**
 * A message over the parse limits: kept raw, marked `unparsed` with the limit in `error`, and
 * never parsed again (the sweeper takes only `stored` rows). `kind` and the domain come from its
 * recipients, so that a reply shows in the inbound list with its reason.
 */
export async function markInboundUnparsed(
  db: Db,
  id: string,
  p: { kind: string | null; domainId: string | null; error: string },
): Promise<void> {
  await db`
    update inbound_messages set status = 'unparsed', error = ${p.error}, kind = ${p.kind},
      domain_id = coalesce(${p.domainId}, domain_id), from_address = coalesce(from_address, nullif(mail_from, '')),
      processed_at = now()
    where id = ${id} and status = 'stored'`;
}

/**
 * Stored messages whose job was lost (the MX stored, then Redis failed): the sweeper requeues
 * them, a DMARC report handed on (`kind` set) to the dmarc-report queue, the rest to inbound.
 */
export async function staleStoredInbound(
  db: Db,
  olderThanMs: number,
  limit: number,
): Promise<{ id: string; kind: string | null }[]> {
  return await db<{ id: string; kind: string | null }[]>`
    select id, kind from inbound_messages
    where status = 'stored' and created_at < now() - make_interval(secs => ${olderThanMs / 1000})
    order by id limit ${limit}`;
}

/** A DMARC report mail handed to the dmarc-report queue: still `stored`, its kind and domain known. */
export async function markInboundDmarc(db: Db, id: string, domainId: string): Promise<void> {
  await db`update inbound_messages set kind = 'dmarc_report', domain_id = ${domainId} where id = ${id} and status = 'stored'`;
}

export interface ReplyRoute {
  orgId: string;
  domainId: string;
  domainName: string;
  /** The domain's inbound settings as stored (shared/domains/inbound-routes.ts reads them). */
  inbound: unknown;
}

/** The verified domain `name` (and its organization), or null. */
export async function verifiedDomainByName(db: Db, name: string): Promise<ReplyRoute | null> {
  const [row] = await db<{ org_id: string; id: string; name: string; inbound: unknown }[]>`
    select org_id, id, name, inbound from domains where name = ${name} and status = 'verified'`;
  return row ? { orgId: row.org_id, domainId: row.id, domainName: row.name, inbound: row.inbound } : null;
}

/** A sent message of the organization by its Message-ID (without angle brackets). */
export async function findEmailByMessageId(db: Db, orgId: string, messageId: string): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`
    select id from emails where org_id = ${orgId} and message_id = ${messageId} order by id limit 1`;
  return row?.id ?? null;
}

export interface RecipientRef {
  recipientId: string;
  emailId: string;
  orgId: string;
  mode: 'live' | 'test';
  email: string;
  domainId: string;
  keyId: string | null;
  templateId: string | null;
  kind: string | null;
  provider: string | null;
}

export async function findRecipient(db: Db, recipientId: string): Promise<RecipientRef | null> {
  const [row] = await db<RecipientRef[]>`
    select r.id as "recipientId", r.email_id as "emailId", r.org_id as "orgId", e.mode, r.email,
           e.domain_id as "domainId", e.key_id as "keyId", e.template_id as "templateId", e.kind, r.provider
    from email_recipients r join emails e on e.id = r.email_id
    where r.id = ${recipientId}`;
  return row ?? null;
}

/**
 * The recipient `address` of the organization's message with that Message-ID (ARF fallback);
 * without an address, the message's recipient only when it had exactly one.
 */
export async function findRecipientByMessage(
  db: Db,
  orgId: string,
  messageId: string,
  address: string | null,
): Promise<string | null> {
  const rows = await db<{ id: string }[]>`
    select r.id from email_recipients r join emails e on e.id = r.email_id
    where e.org_id = ${orgId} and e.message_id = ${messageId}
      ${address ? db`and r.email = ${address.toLowerCase()}` : db``}
    order by r.id limit 2`;
  return rows.length === 1 || (address && rows[0]) ? rows[0]!.id : null;
}

export async function markRecipientBounced(db: Db, recipientId: string, reply: string | null): Promise<void> {
  await db`
    update email_recipients set status = 'bounced', last_response = coalesce(${reply}, last_response),
      last_event = 'email.bounced', last_event_at = now(), updated_at = now()
    where id = ${recipientId}`;
}

export async function markRecipientComplained(db: Db, recipientId: string): Promise<void> {
  await db`
    update email_recipients set complained_at = coalesce(complained_at, now()),
      last_event = 'email.complained', last_event_at = now(), updated_at = now()
    where id = ${recipientId}`;
}

/** The columns of the API's inbound object (not the raw bytes). */
const INBOUND_COLUMNS = `id, org_id, domain_id, source, kind, mail_from, rcpt_to, size, status, error, from_address,
  to_addresses, cc_addresses, subject, text, html, headers, message_id, in_reply_to, email_id, auto_reply,
  helo, mailbox_hash, stripped_text, auth, route, forward_email_id, created_at, processed_at`;

/** Received messages the API lists: replies and routed messages (webhook or forwarded). */
const LISTED_KINDS = ['reply', 'forward'];

export async function listInbound(
  db: Db,
  orgId: string,
  domainIds: string[] | null,
  page: { limit: number; after?: string | undefined; before?: string | undefined },
): Promise<InboundRow[]> {
  const scope = domainIds ? db`and domain_id = any(${domainIds})` : db``;
  const cols = db.unsafe(INBOUND_COLUMNS);
  if (page.before) {
    const rows = await db<InboundRow[]>`
      select ${cols} from inbound_messages where org_id = ${orgId} and kind = any(${LISTED_KINDS}) ${scope}
        and id > ${page.before}
      order by id asc limit ${page.limit + 1}`;
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<InboundRow[]>`
    select ${cols} from inbound_messages where org_id = ${orgId} and kind = any(${LISTED_KINDS}) ${scope}
      ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

export async function getInbound(db: Db, orgId: string, id: string): Promise<InboundRow | null> {
  const [row] = await db<InboundRow[]>`
    select ${db.unsafe(INBOUND_COLUMNS)}
    from inbound_messages where org_id = ${orgId} and id = ${id} and kind = any(${LISTED_KINDS})`;
  return row ?? null;
}

export interface InboundAttachmentRow {
  id: string;
  filename: string | null;
  content_type: string;
  content_id: string | null;
  size: number;
}

export async function inboundAttachments(db: Db, id: string): Promise<InboundAttachmentRow[]> {
  return await db<InboundAttachmentRow[]>`
    select id, filename, content_type, content_id, size from inbound_attachments
    where inbound_id = ${id} order by position`;
}

/** One attachment's bytes (the caller checked the message is the key's). */
export async function inboundAttachmentContent(
  db: Db,
  inboundId: string,
  id: string,
): Promise<(InboundAttachmentRow & { content: Buffer }) | null> {
  const [row] = await db<(InboundAttachmentRow & { content: Buffer })[]>`
    select id, filename, content_type, content_id, size, content from inbound_attachments
    where inbound_id = ${inboundId} and id = ${id}`;
  return row ?? null;
}

/**
 * The forwarded copies of the organization sent with this SRS envelope sender (a bounce's
 * recipient), each recipient newest first.
 */
export async function forwardRecipientsByEnvelope(
  db: Db,
  orgId: string,
  envelopeFrom: string,
): Promise<{ id: string; email: string }[]> {
  return await db<{ id: string; email: string }[]>`
    select r.id, r.email from emails e join email_recipients r on r.email_id = e.id
    where e.org_id = ${orgId} and lower(e.envelope_from) = ${envelopeFrom.toLowerCase()}
    order by e.id desc, r.id limit 50`;
}

/** Every listed message received in reply to one sent email, oldest first (the console's thread). */
export async function inboundThread(db: Db, orgId: string, emailId: string, limit = 100): Promise<InboundRow[]> {
  return await db<InboundRow[]>`
    select ${db.unsafe(INBOUND_COLUMNS)}
    from inbound_messages where org_id = ${orgId} and email_id = ${emailId} and kind = any(${LISTED_KINDS})
    order by id asc limit ${limit}`;
}
