// One delivered message with one recipient, inserted with SQL, for the tracking-link tests.
import type { Sql } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';

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
            ${m.recipient.split('@')[1]!}, ${m.provider ?? null}, 'delivered', now())`;
  return { emailId, recipientId, recipient: m.recipient.toLowerCase() };
}
