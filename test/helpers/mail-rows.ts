// Minimal email + recipient rows inserted with SQL, for tests of consumers of the event log
// (metrics, webhooks) that do not go through the sending API.
import type { Sql } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';

export interface SeededEmail {
  emailId: string;
  recipients: { id: string; email: string }[];
}

export async function insertEmailRows(
  sql: Sql,
  e: {
    orgId: string;
    domainId: string;
    domainName: string;
    keyId?: string | null;
    mode?: 'live' | 'test';
    to: string[];
    kind?: string | null;
  },
): Promise<SeededEmail> {
  const emailId = newId('em');
  await sql`
    insert into emails (id, org_id, key_id, domain_id, mode, from_address, from_email, to_addresses, subject, html, message_id, kind, status)
    values (${emailId}, ${e.orgId}, ${e.keyId ?? null}, ${e.domainId}, ${e.mode ?? 'live'},
            ${`Sender <hello@${e.domainName}>`}, ${`hello@${e.domainName}`}, ${e.to}, 'Hello', '<p>Hi</p>',
            ${`${emailId}@${e.domainName}`}, ${e.kind ?? null}, 'sent')`;
  const recipients = [];
  for (const address of e.to) {
    const id = newId('rcp');
    await sql`
      insert into email_recipients (id, email_id, org_id, field, address, email, domain, status)
      values (${id}, ${emailId}, ${e.orgId}, 'to', ${address}, ${address.toLowerCase()}, ${address.split('@')[1]!}, 'sent')`;
    recipients.push({ id, email: address });
  }
  return { emailId, recipients };
}
