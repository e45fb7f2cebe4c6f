// The console's list of an organization's messages (docs/console.md "Emails"): newest first,
// one mode at a time, with filters that combine. Each filter has an index of its own
// (sql/000300_console_email_search.sql), all led by (org_id, mode) where they can be, so that a
// page costs the same in an organization of a thousand messages or of a million
// (bench/console measures it).
import type { Mode } from '../keys.js';
import type { Stream } from '../streams.js';
import type { Db } from './pool.js';
import { jsonParam } from './params.js';

/**
 * The state the console shows for a message: its status until it is handed over, then its last
 * event (delivered, bounced, delivery_delayed, opened…). The same expression is indexed
 * (emails_org_state_idx): keep the two identical.
 */
const STATE_SQL = `(case when e.status = 'sent' then coalesce(substr(e.last_event, 7), 'sent') else e.status end)`;

export const EMAIL_STATES = [
  'scheduled',
  'queued',
  'processing',
  'sent',
  'delivered',
  'delivery_delayed',
  'bounced',
  'complained',
  'rejected',
  'failed',
  'canceled',
  'opened',
  'clicked',
  'unsubscribed',
] as const;
export type EmailState = (typeof EMAIL_STATES)[number];

/** STATE_SQL for one row already read. */
export function emailState(status: string, lastEvent: string | null): EmailState {
  return (status === 'sent' ? (lastEvent ? lastEvent.slice(6) : 'sent') : status) as EmailState;
}

export interface EmailSearch {
  orgId: string;
  mode: Mode;
  state?: EmailState | undefined;
  /** A recipient's address (lower case): exact, or every address that starts with it. */
  recipient?: { value: string; prefix: boolean } | undefined;
  /** Every recipient at this domain (lower case, exactly the part after the @). */
  recipientDomain?: string | undefined;
  /** The sender's bare address, lower case. */
  from?: string | undefined;
  /**
   * Whole words of the subject (letters and digits), all of which it must contain. Whole words,
   * not prefixes: the planner then knows how common each word is (and walks the newest messages
   * for a common one), and the index intersects a rare word with a common one quickly.
   */
  subjectWords?: string[] | undefined;
  domainId?: string | undefined;
  tag?: { name: string; value: string } | undefined;
  keyId?: string | undefined;
  templateId?: string | undefined;
  stream?: Stream | undefined;
  /** Created at or after. */
  since?: Date | undefined;
  /** Created before. */
  until?: Date | undefined;
}

export interface EmailSearchPage {
  limit: number;
  /** Older than this id. */
  after?: string | undefined;
  /** Newer than this id. */
  before?: string | undefined;
}

export interface EmailListRow {
  id: string;
  mode: Mode;
  created_at: Date;
  scheduled_at: Date | null;
  from_address: string;
  first_recipient: string | null;
  recipient_count: number;
  subject: string;
  state: EmailState;
  stream: Stream;
  last_event: string | null;
  last_event_at: Date | null;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The smallest `em_` id created at `ms` (a ULID's first 10 characters are its time). */
export function emailIdAt(ms: number): string {
  let t = Math.max(0, Math.floor(ms));
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32]! + out;
    t = Math.floor(t / 32);
  }
  return `em_${out}${'0'.repeat(16)}`;
}

/**
 * Ids are minted by the application and created_at by Postgres: their clocks may differ a little.
 * The id range (what the index can seek) is widened by this much; created_at decides exactly.
 */
const CLOCK_SLACK_MS = 5 * 60_000;

/** The first string after every string that starts with `prefix`, in byte order. */
function prefixEnd(prefix: string): string {
  const chars = [...prefix];
  const last = chars.pop()!;
  return chars.join('') + String.fromCodePoint(last.codePointAt(0)! + 1);
}

function conditions(db: Db, s: EmailSearch) {
  const r = s.recipient;
  // Pattern operators (~>=~, ~<~) compare bytes: the index's operator class, whatever the
  // database's collation, and usable by a prepared statement's generic plan (LIKE is not).
  const recipient = !r
    ? db``
    : r.prefix
      ? db`and e.id in (select x.email_id from email_recipients x where x.org_id = ${s.orgId}
             and x.email ~>=~ ${r.value} and x.email ~<~ ${prefixEnd(r.value)})`
      : db`and e.id in (select x.email_id from email_recipients x where x.org_id = ${s.orgId} and x.email = ${r.value})`;
  // The expression of email_recipients_org_domain_idx (sql/000741_recipient_domain_search.sql).
  const recipientDomain = s.recipientDomain
    ? db`and e.id in (select x.email_id from email_recipients x where x.org_id = ${s.orgId}
           and split_part(x.email, '@', 2) = ${s.recipientDomain})`
    : db``;
  const words = s.subjectWords?.length
    ? db`and to_tsvector('simple', e.subject) @@ to_tsquery('simple', ${s.subjectWords.join(' & ')})`
    : db``;
  return db`e.org_id = ${s.orgId} and e.mode = ${s.mode}
    ${s.state ? db`and ${db.unsafe(STATE_SQL)} = ${s.state}` : db``}
    ${recipient}
    ${recipientDomain}
    ${s.from ? db`and e.from_email = ${s.from}` : db``}
    ${words}
    ${s.domainId ? db`and e.domain_id = ${s.domainId}` : db``}
    ${s.tag ? db`and e.tags @> ${jsonParam(db, [s.tag])}` : db``}
    ${s.keyId ? db`and e.key_id = ${s.keyId}` : db``}
    ${s.templateId ? db`and e.template_id = ${s.templateId}` : db``}
    ${s.stream ? db`and e.stream = ${s.stream}` : db``}
    ${s.since ? db`and e.id >= ${emailIdAt(s.since.getTime() - CLOCK_SLACK_MS)} and e.created_at >= ${s.since}` : db``}
    ${s.until ? db`and e.id < ${emailIdAt(s.until.getTime() + CLOCK_SLACK_MS)} and e.created_at < ${s.until}` : db``}`;
}

/** Newest first, `limit + 1` rows (the extra one tells that there is more). */
export async function searchEmails(db: Db, s: EmailSearch, page: EmailSearchPage): Promise<EmailListRow[]> {
  const columns = db.unsafe(`e.id, e.mode, e.created_at, e.scheduled_at, e.from_address,
    coalesce(e.to_addresses[1], e.cc_addresses[1], e.bcc_addresses[1]) as first_recipient,
    cardinality(e.to_addresses) + cardinality(e.cc_addresses) + cardinality(e.bcc_addresses) as recipient_count,
    e.subject, ${STATE_SQL} as state, e.stream, e.last_event, e.last_event_at`);
  if (page.before) {
    const rows = await db<EmailListRow[]>`
      select ${columns} from emails e where ${conditions(db, s)} and e.id > ${page.before}
      order by e.id asc limit ${page.limit + 1}`;
    // The `limit` rows just after the cursor, newest first; the extra row stays last.
    return [...rows.slice(0, page.limit).reverse(), ...rows.slice(page.limit)];
  }
  return await db<EmailListRow[]>`
    select ${columns} from emails e where ${conditions(db, s)} ${page.after ? db`and e.id < ${page.after}` : db``}
    order by e.id desc limit ${page.limit + 1}`;
}

/** How many emails of `mode` the organization created since `since`, counted up to `cap` (an index range scan). */
/** Whether the organization has any email of `mode` (the console's default list). */
export async function hasEmails(db: Db, orgId: string, mode: 'live' | 'test'): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`
    select exists (select 1 from emails where org_id = ${orgId} and mode = ${mode}) as any`;
  return row!.any;
}

export async function countEmailsSince(
  db: Db,
  orgId: string,
  mode: 'live' | 'test',
  since: Date,
  cap: number,
): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from emails
      where org_id = ${orgId} and mode = ${mode} and id >= ${emailIdAt(since.getTime())}
      limit ${cap}) x`;
  return row?.n ?? 0;
}
