// Seeds a message, its recipients and events straight in SQL (the delivery, tracking and inbound
// engines that normally record them are built elsewhere), for the webhook tests.
import type { Sql } from '../../shared/db/pool.js';
import { recordEvents, type EventRow, type NewEvent } from '../../shared/events.js';
import { newId } from '../../shared/ids.js';

export interface SeededEmail {
  id: string;
  orgId: string;
  mode: 'live' | 'test';
  recipients: Record<string, string>;
}

export interface EmailSeed {
  orgId: string;
  domainId: string;
  mode?: 'live' | 'test';
  from?: string;
  to?: string[];
  cc?: string[];
  subject?: string;
  kind?: string | null;
  tags?: { name: string; value: string }[];
  template?: { slug: string; version: number };
}

export async function seedEmail(sql: Sql, s: EmailSeed): Promise<SeededEmail> {
  const id = newId('em');
  const to = s.to ?? ['Ann <ann@example.com>'];
  const cc = s.cc ?? [];
  let templateId: string | null = null;
  if (s.template) {
    templateId = newId('tpl');
    await sql`insert into templates (id, org_id, slug, name) values (${templateId}, ${s.orgId}, ${s.template.slug}, 'T')`;
  }
  await sql`
    insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, cc_addresses,
      subject, tags, kind, template_id, template_slug, template_version, message_id, status)
    values (${id}, ${s.orgId}, ${s.domainId}, ${s.mode ?? 'live'}, ${s.from ?? 'Acme <news@acme.test>'},
      'news@acme.test', ${to}, ${cc}, ${s.subject ?? 'Hello'}, ${sql.json(s.tags ?? [])}, ${s.kind ?? null},
      ${templateId}, ${s.template?.slug ?? null}, ${s.template?.version ?? null}, ${`${id}@acme.test`}, 'sent')`;
  const recipients: Record<string, string> = {};
  for (const [field, list] of [
    ['to', to],
    ['cc', cc],
  ] as const) {
    for (const address of list) {
      const email = (/<([^>]+)>/.exec(address)?.[1] ?? address).toLowerCase();
      const rid = newId('rcp');
      await sql`
        insert into email_recipients (id, email_id, org_id, field, address, email, domain)
        values (${rid}, ${id}, ${s.orgId}, ${field}, ${address}, ${email}, ${email.split('@')[1]!})`;
      recipients[email] = rid;
    }
  }
  return { id, orgId: s.orgId, mode: s.mode ?? 'live', recipients };
}

/** Records one event about `recipient` of the message (idempotent by a fresh dedupe key). */
export async function seedEvent(
  sql: Sql,
  email: SeededEmail,
  type: NewEvent['type'],
  recipient: string,
  extra: Partial<NewEvent> = {},
): Promise<EventRow> {
  const [row] = await recordEvents(sql, [
    {
      orgId: email.orgId,
      mode: email.mode,
      type,
      dedupeKey: `${newId('evt')}:${type}`,
      emailId: email.id,
      recipientId: email.recipients[recipient] ?? null,
      recipient,
      ...extra,
    },
  ]);
  return row!;
}
