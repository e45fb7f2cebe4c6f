// Seeds messages straight into the mail tables (the delivery engine's tests do not go through
// the emails API), and gives a domain a DKIM key pair whose public half a test can publish.
import { generateKeyPairSync } from 'node:crypto';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/pool.js';
import type { QueueName, Queues } from '../../shared/queues.js';

export interface DkimPair {
  privateKey: string;
  /** The `p=` value of the DKIM TXT record. */
  publicB64: string;
}

export async function giveDkimKey(sql: Sql, domainId: string): Promise<DkimPair> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const publicB64 = publicKey.toString('base64');
  await sql`update domains set dkim_private_key = ${privateKey}, dkim_public_key = ${publicB64} where id = ${domainId}`;
  return { privateKey, publicB64 };
}

export interface SeedEmail {
  orgId: string;
  domainId: string;
  domainName: string;
  mode?: 'live' | 'test';
  to: string[];
  cc?: string[];
  bcc?: string[];
  subject?: string;
  html?: string | null;
  text?: string | null;
  topicId?: string | null;
  headers?: Record<string, string>;
  createdAt?: Date;
}

export async function seedEmail(sql: Sql, e: SeedEmail): Promise<{ id: string; recipients: Record<string, string> }> {
  const id = newId('em');
  const from = `hello@${e.domainName}`;
  await sql`
    insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, cc_addresses,
                        bcc_addresses, subject, html, text, headers, topic_id, message_id, status, created_at)
    values (${id}, ${e.orgId}, ${e.domainId}, ${e.mode ?? 'live'}, ${`Acme <${from}>`}, ${from}, ${e.to},
            ${e.cc ?? []}, ${e.bcc ?? []}, ${e.subject ?? 'Hello'}, ${e.html === undefined ? '<p>Hi there</p>' : e.html},
            ${e.text === undefined ? 'Hi there' : e.text}, ${sql.json(e.headers ?? {})}, ${e.topicId ?? null},
            ${`${id}@${e.domainName}`}, 'queued', ${e.createdAt ?? new Date()})`;
  const recipients: Record<string, string> = {};
  const rows = [
    ...e.to.map((a) => ['to', a] as const),
    ...(e.cc ?? []).map((a) => ['cc', a] as const),
    ...(e.bcc ?? []).map((a) => ['bcc', a] as const),
  ];
  for (const [field, address] of rows) {
    const rid = newId('rcp');
    recipients[address] = rid;
    await sql`
      insert into email_recipients (id, email_id, org_id, field, address, email, domain)
      values (${rid}, ${id}, ${e.orgId}, ${field}, ${address}, ${address.toLowerCase()}, ${address.split('@')[1]!.toLowerCase()})`;
  }
  return { id, recipients };
}

/** What the emails API does after storing a message. */
export async function enqueueEmail(queues: Queues, emailId: string): Promise<void> {
  const q = queues['delivery' satisfies QueueName];
  await q.add('email', { emailId }, { jobId: emailId });
}
