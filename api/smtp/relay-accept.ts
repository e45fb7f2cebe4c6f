// What the relay checks and stores, with the rules of POST /emails (emails-input.ts): the key's
// rate-limit bucket (one token per message), the sender's domain (a verified domain of the
// organization, and for a restricted key one of its own) on both the envelope and the From
// header, and `sending_paused`. An accepted message is stored with its raw MIME, as its client
// wrote it minus the X-Tern-* control headers, and enqueued exactly like an API send.
// A 4xx makes the client send the message again, so the relay answers one only when nothing was
// stored. When the store cannot be confirmed (Postgres lost mid-insert and unreachable for
// STORE_CONFIRM_SECONDS) it answers 451 and remembers the email id under the message's digest
// (key, envelope, bytes) for 24 h: the client's resend of the same message reuses the id, and the
// insert, which skips rows already stored, stores it once.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { MailParser, type AddressObject, type Headers } from 'mailparser';
import type { AuthContext, AuthDomain } from '../../shared/auth.js';
import type { NewRecipient } from '../../shared/db/emails.js';
import { buildEmailRow } from '../../shared/email-row.js';
import type { Sql } from '../../shared/db/pool.js';
import { ApiError, OutcomeUnknown } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import { formatMailbox, parseAddress, type Mailbox } from '../../shared/mail/addresses.js';
import { fieldsNamed, readHeaderBlock, removeFields } from '../../shared/mail/header-block.js';
import type { PromRecorder } from '../../shared/prom/recorder.js';
import type { Queues } from '../../shared/queues.js';
import type { RateLimiter } from '../../shared/rate-limit.js';
import type { Redis } from '../../shared/redis.js';
import type { RedisKeys } from '../../shared/redis-keys.js';
import { fromDomain } from '../mail/emails-input.js';
import { textProblem } from '../text-checks.js';
import type { PreparedEmail } from '../mail/emails-input.js';
import { storeAndEnqueue } from '../mail/emails-send.js';
import { fromApiError, smtpErrors } from './relay-errors.js';
import { readControlHeaders } from './relay-headers.js';

export interface AcceptDeps {
  sql: Sql;
  queues: Queues;
  logger: Logger;
  rateLimiter: RateLimiter;
  prom: PromRecorder;
  redis: Redis;
  redisKeys: RedisKeys;
  config: { storeConfirmSeconds: number };
}

const UNCONFIRMED_TTL_S = 24 * 3600;

/** Identifies a resend of the same message by the same key to the same envelope. */
function digestOf(auth: AuthContext, env: RelayEnvelope, raw: Buffer): string {
  return createHash('sha256')
    .update(`${auth.key.id}\n${env.mailFrom.email}\n${env.rcptTo.map((r) => r.email).join(',')}\n`)
    .update(raw)
    .digest('hex');
}

/** The id of an earlier, unconfirmed store of this message; null when none (or Redis is away). */
async function unconfirmedId(deps: AcceptDeps, digest: string): Promise<string | null> {
  return await deps.redis.get(deps.redisKeys.relayUnconfirmed(digest)).catch(() => null);
}

async function store(deps: AcceptDeps, auth: AuthContext, digest: string, p: PreparedEmail): Promise<void> {
  try {
    await storeAndEnqueue(deps, 'relay', [p]);
  } catch (err) {
    if (err instanceof OutcomeUnknown) {
      const emailId = p.email.id;
      await deps.redis
        .set(deps.redisKeys.relayUnconfirmed(digest), emailId, 'EX', UNCONFIRMED_TTL_S)
        .catch(() => undefined);
      deps.logger.error({ event: 'RELAY_STORE_UNCONFIRMED', emailId, keyId: auth.key.id }, err.message);
      throw smtpErrors.unconfirmed();
    }
    // A value Postgres refuses (SQLSTATE class 22, data exception) is refused again on every
    // retry: a permanent 554, not a 451 the client would repeat for ever.
    const code = (err as { code?: unknown } | null)?.code;
    const permanent = typeof code === 'string' && code.startsWith('22');
    deps.logger.error(
      { event: 'RELAY_STORE_FAILED', err, keyId: auth.key.id, permanent },
      'could not store a relay message',
    );
    throw permanent ? smtpErrors.invalid('a field of the message cannot be stored') : smtpErrors.temporary();
  }
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
  if (!rl.allowed) {
    deps.prom.inc('tern_rate_limited_total', ['relay']);
    throw smtpErrors.rateLimited(rl.retryAfterSeconds);
  }
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

// A UTF-16 part or encoded word of an odd byte count decodes to a lone surrogate, which Postgres
// refuses in jsonb and alters in text: the stored, decoded copy gets U+FFFD instead (as the inbound
// worker does); the message itself is delivered as the client wrote it.
const LONE_SURROGATE = /\p{Cs}/gu;
function wellFormed<T>(value: T): T {
  return typeof value === 'string' ? (value.replace(LONE_SURROGATE, '\ufffd') as T) : value;
}

function headerMailboxes(value: unknown): string[] {
  return addresses(value).map((a) => formatMailbox({ name: wellFormed(a.name) || null, address: a.address }));
}

/** The From header: exactly one valid mailbox. */
function fromHeader(headers: Headers): Mailbox {
  const list = addresses(headers.get('from'));
  if (list.length === 0) throw smtpErrors.invalid('the message has no From address');
  if (list.length > 1) throw smtpErrors.invalid('the From header must name exactly one address');
  const parsed = parseAddress(list[0]!.address);
  if (!parsed.ok) throw smtpErrors.invalid(`the From address ${parsed.reason}`);
  return { ...parsed.mailbox, name: wellFormed(list[0]!.name) || null };
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
  // RFC 5322 has no place for NUL (nor has 8BITMIME); Postgres text would refuse it anyway.
  if (raw.includes(0)) throw smtpErrors.invalid('the message contains a NUL byte');
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

  const digest = digestOf(auth, env, raw);
  const retried = await unconfirmedId(deps, digest);
  const id = retried ?? newId('em');
  const to = headerMailboxes(parsed.headers.get('to'));
  const cc = headerMailboxes(parsed.headers.get('cc'));
  const recipients = recipientRows(auth, id, env, to, cc);
  const subject = wellFormed(parsed.headers.get('subject'));
  const [html, text] = [wellFormed(parsed.html), wellFormed(parsed.text)];
  // A NUL can also arrive encoded (quoted-printable =00, an encoded word): refused for good too.
  const replyTo = headerMailboxes(parsed.headers.get('reply-to'));
  const nul = textProblem({ subject, text, html, from: from.name, to, cc, replyTo }, 'message');
  if (nul) throw smtpErrors.invalid(nul);
  const email = buildEmailRow({
    id,
    orgId: auth.org.id,
    keyId: auth.key.id,
    mode: auth.key.mode,
    domain,
    source: 'smtp',
    from: { address: formatMailbox(from), email: from.email },
    to,
    cc,
    bcc: recipients.filter((r) => r.field === 'bcc').map((r) => r.address),
    replyTo,
    subject: typeof subject === 'string' ? subject : '',
    html,
    text,
    tags: control.tags,
    kind: control.kind,
    stream: control.stream ?? undefined,
    messageId: messageIdOf(parsed.headers) ?? undefined,
    rawMime: stored,
  });
  await store(deps, auth, digest, { email, recipients, attachments: [] });
  if (retried) await deps.redis.del(deps.redisKeys.relayUnconfirmed(digest)).catch(() => undefined);
  return id;
}
