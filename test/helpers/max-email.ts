// Send bodies at the largest size the schemas allow in every field (api/schemas/emails.ts):
// addresses of 512 characters, 50 per field, 50 headers and tags at their longest, the longest
// subject, kind and schedule, content and attachments at their limits. Used to prove that a
// request at every maximum fits its route's body limit and is stored whole.
import { BATCH_ITEM, MAX_ATTACHMENT_BYTES, MAX_RECIPIENTS_PER_FIELD } from '../../api/schemas/emails.js';

const ADDRESS_CHARS = 512;

/** `"Name…" <local@domain>` padded with its display name to exactly 512 characters. */
export function longMailbox(local: string, domain: string): string {
  const bare = `${local}@${domain}`;
  return `"${'N'.repeat(ADDRESS_CHARS - bare.length - 5)}" <${bare}>`;
}

function pad(prefix: string, length: number, fill = 'x'): string {
  return prefix + fill.repeat(length - prefix.length);
}

/** `bytes` bytes as `count` attachments with names, types and content ids at their longest. */
function attachments(count: number, bytes: number, tag: string) {
  return Array.from({ length: count }, (_, i) => {
    const size = Math.floor(bytes / count) + (i < bytes % count ? 1 : 0);
    return {
      filename: pad(`${tag}-${i}-`, 251) + '.pdf',
      content: Buffer.alloc(size, i + 1).toString('base64'),
      content_type: pad('application/x-', 255),
      content_id: pad(`${tag}-${i}-`, 255),
    };
  });
}

export interface MaxOptions {
  /** The verified sending domain. */
  domain: string;
  /** A topic of the organization (an id is as long as it is). */
  topicId: string;
  /** Makes the addresses of this message its own. */
  tag: string;
  /** A `scheduled_at` at the schema's longest form; omitted when null. */
  scheduledAt: Date | null;
}

function scheduled(at: Date): string {
  // ISO 8601 with nanoseconds and a numeric offset: the longest form the parser takes.
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000000+00:00');
}

function commonFields(o: MaxOptions) {
  const list = (field: string) =>
    Array.from({ length: MAX_RECIPIENTS_PER_FIELD }, (_, i) => longMailbox(`${field}${i}-${o.tag}`, 'example.com'));
  return {
    from: longMailbox(`sender-${o.tag}`, o.domain),
    to: list('to'),
    cc: list('cc'),
    bcc: list('bcc'),
    reply_to: list('reply'),
    subject: pad(`${o.tag} `, 998),
    headers: Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [pad(`X-Max-${i}-`, 100), pad(`${o.tag}-${i}-`, 2000)]),
    ),
    tags: Array.from({ length: 50 }, (_, i) => ({ name: pad(`t${i}_`, 256), value: pad(`${o.tag}_${i}_`, 256) })),
    kind: pad('kind-', 64),
    topic_id: o.topicId,
    ...(o.scheduledAt ? { scheduled_at: scheduled(o.scheduledAt) } : {}),
  };
}

/** One item of POST /emails/batch at every maximum (BATCH_ITEM). */
export function maxBatchItem(o: MaxOptions) {
  return {
    ...commonFields(o),
    html: pad(`<p>${o.tag}</p>`, BATCH_ITEM.contentChars),
    text: pad(`${o.tag} `, BATCH_ITEM.contentChars),
    attachments: attachments(BATCH_ITEM.attachments, BATCH_ITEM.attachmentBytes, o.tag),
  };
}

/** A POST /emails body at every maximum. */
export function maxSendBody(o: MaxOptions) {
  return {
    ...commonFields(o),
    html: pad(`<p>${o.tag}</p>`, 5 * 1024 * 1024),
    text: pad(`${o.tag} `, 5 * 1024 * 1024),
    attachments: attachments(100, MAX_ATTACHMENT_BYTES, o.tag),
  };
}
