// One delivered message with one recipient, inserted with SQL, for the tracking-link tests; and
// the wait a test makes before it clicks like a person (a click within TOO_FAST_MS of delivery is
// a gateway's, DESIGN §20).
import type { Sql } from '../../shared/db/pool.js';
import { TOO_FAST_MS } from '../../shared/engagement/machine-sources.js';
import { newId } from '../../shared/ids.js';
import { sleep, waitFor } from './wait.js';

export interface TrackedMessage {
  emailId: string;
  recipientId: string;
  recipient: string;
}

export async function insertTrackedMessage(
  sql: Sql,
  m: {
    orgId: string;
    domainId: string;
    domainName: string;
    keyId?: string | null;
    mode?: 'live' | 'test';
    recipient: string;
    kind?: string | null;
    provider?: string | null;
    /** Seconds from now of the delivery (default: an hour ago, so that a click is a person's). */
    deliveredInSeconds?: number;
  },
): Promise<TrackedMessage> {
  const emailId = newId('em');
  const recipientId = newId('rcp');
  await sql`
    insert into emails (id, org_id, key_id, domain_id, mode, from_address, from_email, to_addresses,
                        subject, html, message_id, kind, status)
    values (${emailId}, ${m.orgId}, ${m.keyId ?? null}, ${m.domainId}, ${m.mode ?? 'live'},
            ${`hello@${m.domainName}`}, ${`hello@${m.domainName}`}, ${[m.recipient]}, 'Hello',
            '<p>Hi</p>', ${`${emailId}@${m.domainName}`}, ${m.kind ?? null}, 'sent')`;
  await sql`
    insert into email_recipients (id, email_id, org_id, field, address, email, domain, provider, status, delivered_at)
    values (${recipientId}, ${emailId}, ${m.orgId}, 'to', ${m.recipient}, ${m.recipient.toLowerCase()},
            ${m.recipient.split('@')[1]!}, ${m.provider ?? null}, 'delivered',
            now() + make_interval(secs => ${m.deliveredInSeconds ?? -3600}))`;
  return { emailId, recipientId, recipient: m.recipient.toLowerCase() };
}

/**
 * Waits until each of these recipients' messages is delivered and TOO_FAST_MS have passed since
 * the last delivery: time passing is the subject (a click sooner is a machine's), so this sleeps
 * what is left.
 */
export async function pastTooFast(sql: Sql, recipients: string[]): Promise<void> {
  const emails = recipients.map((r) => r.toLowerCase());
  const last = await waitFor(`${emails.join(', ')} delivered`, async () => {
    const [row] = await sql<{ missing: number; last: Date | null }[]>`
      select count(*) filter (where delivered_at is null)::int as missing, max(delivered_at) as last
      from (select e, (select max(delivered_at) from email_recipients where email = e) as delivered_at
            from unnest(${emails}::text[]) as e) d`;
    return row!.missing === 0 ? row!.last : null;
  });
  const left = last!.getTime() + TOO_FAST_MS + 50 - Date.now();
  if (left > 0) await sleep(left);
}
