// What the relay checks and stores, with the rules of POST /emails (emails-input.ts): the key's
// rate-limit bucket (one token per message), the sender's domain (a verified domain of the
// organization, and for a restricted key one of its own) on both the envelope and the From
// header, and `sending_paused`. An accepted message is stored with its raw MIME, as its client
// wrote it minus the X-Tern-* control headers, and enqueued exactly like an API send.
import type { Readable } from 'node:stream';
import { MailParser, type AddressObject, type Headers } from 'mailparser';
import type { AuthContext, AuthDomain } from '../../shared/auth.js';
import type { NewEmail, NewRecipient } from '../../shared/db/emails.js';
import type { Sql } from '../../shared/db/pool.js';
import { ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import { formatMailbox, parseAddress, type Mailbox } from '../../shared/mail/addresses.js';
import { fieldsNamed, readHeaderBlock, removeFields } from '../../shared/mail/header-block.js';
import type { Queues } from '../../shared/queues.js';
import type { RateLimiter } from '../../shared/rate-limit.js';
import { fromDomain } from '../routes/emails-input.js';
import { storeAndEnqueue } from '../routes/emails-send.js';
import { fromApiError, smtpErrors } from './relay-errors.js';
import { readControlHeaders } from './relay-headers.js';

export interface AcceptDeps {
  sql: Sql;
  queues: Queues;
  logger: Logger;
  rateLimiter: RateLimiter;
}

/** One message's envelope as the session collected it. */
export interface RelayEnvelope {
  mailFrom: Mailbox;
  rcptTo: Mailbox[];
}

/** Checks a sender address against the key's domains; throws the SMTP refusal. */
export function checkSenderDomain(auth: AuthContext, where: string, sender: Mailbox): AuthDomain {
  try {
    return fromDomain(where, auth, sender);
  } catch (err) {
    if (err instanceof ApiError) throw fromApiError(err);
    throw err;
  }
}

/** MAIL FROM: rate limit, then sender domain, then pause (the API's order of checks). */
export async function admitSender(deps: AcceptDeps, auth: AuthContext, address: string): Promise<Mailbox> {
  const rl = await deps.rateLimiter.take(auth.key.id, auth.org.rateLimit);
  if (!rl.allowed) throw smtpErrors.rateLimited(rl.retryAfterSeconds);
  if (address === '') throw smtpErrors.forbiddenDomain('A sender address is required');
  const parsed = parseAddress(address);
  if (!parsed.ok) throw smtpErrors.badSender(`Sender address ${parsed.reason}`);
  checkSenderDomain(auth, 'MAIL FROM', parsed.mailbox);
  if (auth.org.sendingPaused) throw smtpErrors.paused(auth.org.sendingPausedReason);
  return parsed.mailbox;
}

interface ParsedMessage {
  headers: Headers;
  html: string | null;
  text: string | null;
}

/** Header values and body texts (for the record); attachment bytes are skipped, not buffered. */
async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  const parser = new MailParser({
    skipImageLinks: true,
    skipTextToHtml: true,
    skipHtmlToText: true,
    skipTextLinks: true,
  });
  const out: ParsedMessage = { headers: new Map(), html: null, text: null };
  parser.on('headers', (h: Headers) => (out.headers = h));
  parser.on('data', (d: { type: string; content?: Readable; release?: () => void; html?: unknown; text?: string }) => {
    if (d.type === 'attachment') {
      d.content!.on('end', () => d.release!());
      d.content!.resume();
    } else {
      out.html = typeof d.html === 'string' ? d.html : null;
      out.text = d.text ?? null;
    }
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    parser.end(raw);
  });
  return out;
}

function addresses(value: unknown): { name: string; address: string }[] {
  const objects = (Array.isArray(value) ? value : value ? [value] : []) as AddressObject[];
  const flat: { name: string; address: string }[] = [];
  const walk = (list: AddressObject['value']) => {
    for (const a of list) {
      if (a.group) walk(a.group);
      else if (a.address) flat.push({ name: a.name, address: a.address });
    }
  };
  for (const o of objects) walk(o.value ?? []);
  return flat;
}

function headerMailboxes(value: unknown): string[] {
  return addresses(value).map((a) => formatMailbox({ name: a.name || null, address: a.address }));
}

/** The From header: exactly one valid mailbox. */
function fromHeader(headers: Headers): Mailbox {
  const list = addresses(headers.get('from'));
  if (list.length === 0) throw smtpErrors.invalid('the message has no From address');
  if (list.length > 1) throw smtpErrors.invalid('the From header must name exactly one address');
  const parsed = parseAddress(list[0]!.address);
  if (!parsed.ok) throw smtpErrors.invalid(`the From address ${parsed.reason}`);
  return { ...parsed.mailbox, name: list[0]!.name || null };
}

function messageIdOf(headers: Headers): string | null {
  const raw = headers.get('message-id');
  if (typeof raw !== 'string') return null;
  const id = raw.trim().replace(/^<|>$/g, '').trim();
  return id.length > 0 && id.length <= 998 ? id : null;
}

/** Envelope recipients with their field: To or Cc when the header names them, else Bcc. */
function recipientRows(auth: AuthContext, emailId: string, env: RelayEnvelope, to: string[], cc: string[]) {
  const inTo = new Set(to.map((m) => bare(m)));
  const inCc = new Set(cc.map((m) => bare(m)));
  const seen = new Set<string>();
  const rows: NewRecipient[] = [];
  for (const m of env.rcptTo) {
    if (seen.has(m.email)) continue;
    seen.add(m.email);
    const field = inTo.has(m.email) ? 'to' : inCc.has(m.email) ? 'cc' : 'bcc';
    rows.push({
      id: newId('rcp'),
      email_id: emailId,
      org_id: auth.org.id,
      field,
      address: m.address,
      email: m.email,
      domain: m.domain,
      status: 'queued',
      wait_reason: null,
    });
  }
  return rows;
}

/** The lower-cased bare address of a formatted mailbox ("Name <a@b>" or "a@b"). */
function bare(mailbox: string): string {
  const m = /<([^<>]*)>\s*$/.exec(mailbox);
  return (m ? m[1]! : mailbox).trim().toLowerCase();
}

/** DATA: validates, stores and enqueues one message; returns its email id. */
export async function acceptMessage(
  deps: AcceptDeps,
  auth: AuthContext,
  env: RelayEnvelope,
  raw: Buffer,
): Promise<string> {
  const read = readHeaderBlock(raw);
  if (!read.ok) throw smtpErrors.invalid(read.reason);
  const control = readControlHeaders(raw, read.block);
  // Bcc goes too (as Postfix and sendmail -t do): delivered as written, it would show every
  // recipient the blind copies.
  const stored = removeFields(
    raw,
    fieldsNamed(read.block, (n) => n.startsWith('x-tern-') || n === 'bcc'),
  );
  const parsed = await parseMessage(stored).catch((err: unknown) => {
    throw smtpErrors.invalid(`unreadable MIME (${(err as Error).message})`);
  });
  const from = fromHeader(parsed.headers);
  const domain = checkSenderDomain(auth, 'From header', from);
  if (env.rcptTo.length === 0) throw smtpErrors.invalid('the message has no recipients');

  const id = newId('em');
  const to = headerMailboxes(parsed.headers.get('to'));
  const cc = headerMailboxes(parsed.headers.get('cc'));
  const recipients = recipientRows(auth, id, env, to, cc);
  const subject = parsed.headers.get('subject');
  const email: NewEmail = {
    id,
    org_id: auth.org.id,
    key_id: auth.key.id,
    domain_id: domain.id,
    mode: auth.key.mode,
    source: 'smtp',
    from_address: formatMailbox(from),
    from_email: from.email,
    to_addresses: to,
    cc_addresses: cc,
    bcc_addresses: recipients.filter((r) => r.field === 'bcc').map((r) => r.address),
    reply_to: headerMailboxes(parsed.headers.get('reply-to')),
    subject: typeof subject === 'string' ? subject : '',
    html: parsed.html,
    text: parsed.text,
    headers: {},
    tags: control.tags,
    kind: control.kind,
    topic_id: null,
    template_id: null,
    template_slug: null,
    template_version: null,
    message_id: messageIdOf(parsed.headers) ?? `${id}@${domain.name}`,
    status: 'queued',
    scheduled_at: null,
    raw_mime: stored,
  };
  try {
    await storeAndEnqueue(deps, [{ email, recipients, attachments: [], delay: 0 }]);
  } catch (err) {
    deps.logger.error({ event: 'RELAY_STORE_FAILED', err, keyId: auth.key.id }, 'could not store a relay message');
    throw smtpErrors.temporary();
  }
  return id;
}
