// The email an organization's admins get about one of its organization events (DESIGN §15;
// docs/operations.md "Organization events"). Sent through Tern itself: one message per admin,
// stored in the fan-out's claiming transaction (so an event is emailed once) and delivered by the
// normal pipeline after the commit. The sender is SYSTEM_FROM; its domain must be a verified
// domain of the organization (the message is signed with that domain's DKIM key like any other).
import { enqueueMail } from '../shared/queues.js';
import { getOrgDomain } from '../shared/db/domains.js';
import { insertEmails, type NewEmail, type NewRecipient } from '../shared/db/emails.js';
import type { EventToFanOut } from '../shared/db/webhook-events.js';
import { listOrgUsers } from '../shared/db/users.js';
import type { Db } from '../shared/db/pool.js';
import { buildEmailRow } from '../shared/email-row.js';
import { isOrgEventType } from '../shared/events.js';
import { newId } from '../shared/ids.js';
import { parseMailbox } from '../shared/mail/addresses.js';
import { buildEnvelope } from '../shared/webhooks/payload.js';
import type { DeliveryRequest } from '../shared/delivery-queue.js';
import type { WorkerDeps } from './deps.js';

type Data = Record<string, unknown>;

const text = (v: unknown) => (typeof v === 'string' ? v : '');

const zoneNames = (v: unknown) =>
  Array.isArray(v) ? v.map((z: { zone?: unknown }) => text(z.zone)).join(', ') : 'a blocklist';

/** Subject and first paragraph of each event's email. */
function wording(type: string, d: Data): { subject: string; lead: string } {
  switch (type) {
    case 'organization.paused':
      return { subject: 'Sending paused', lead: `Sending is paused for your organization. ${text(d.reason)}`.trim() };
    case 'organization.resumed':
      return { subject: 'Sending resumed', lead: 'Sending is resumed for your organization.' };
    case 'webhook.disabled':
      return {
        subject: 'Webhook endpoint disabled',
        lead: `The webhook endpoint ${text(d.url)} was disabled after failing: ${text(d.reason)}.`,
      };
    case 'domain.failed':
      return {
        subject: `Domain ${text(d.domain)} failed its DNS check`,
        lead: `The DNS records of ${text(d.domain)} no longer verify; sending from it is refused until they do.`,
      };
    case 'domain.verified':
      return { subject: `Domain ${text(d.domain)} verified`, lead: `${text(d.domain)} passed its DNS check.` };
    case 'ip.listed':
      return {
        subject: `Sending address ${text(d.ip)} is on a blocklist`,
        lead: `The sending address ${text(d.ip)} is listed by ${zoneNames(d.zones)}; receivers may refuse or folder mail from it.${d.pool ? " It is out of its pool's rotation while the pool has an address that is not listed." : ''}`,
      };
    case 'ip.delisted':
      return {
        subject: `Sending address ${text(d.ip)} is off the blocklists`,
        lead: `${text(d.ip)} is no longer listed.`,
      };
    case 'domain.listed':
      return {
        subject: `Domain ${text(d.domain)} is on a blocklist`,
        lead: `The domain ${text(d.domain)} is listed by ${zoneNames(d.zones)}; receivers may refuse or folder mail that names it.`,
      };
    case 'domain.delisted':
      return {
        subject: `Domain ${text(d.domain)} is off the blocklists`,
        lead: `${text(d.domain)} is no longer listed.`,
      };
    default:
      return { subject: type, lead: type };
  }
}

function body(ev: EventToFanOut, data: Data): { subject: string; text: string } {
  const { subject, lead } = wording(ev.type, data);
  return {
    subject: `[Tern] ${subject}`,
    text: `${lead}\n\nEvent: ${ev.type}\nTime: ${ev.created_at.toISOString()}\n\n${JSON.stringify(data, null, 2)}\n`,
  };
}

/** The sending domain of SYSTEM_FROM in this organization, or null (logged) when it cannot send. */
async function senderDomain(tx: Db, deps: WorkerDeps, orgId: string, domainName: string, eventId: string) {
  const d = await getOrgDomain(tx, orgId, domainName);
  if (d?.status === 'verified') return d;
  deps.logger.warn(
    { event: 'ORG_EVENT_MAIL_SENDER_UNVERIFIED', orgId, eventId, domain: domainName },
    'organization event not emailed: SYSTEM_FROM is not on a verified domain of the organization',
  );
  return null;
}

/**
 * Stores the admin emails of the organization events among `events` (in the caller's
 * transaction) and returns their ids, for the caller to enqueue after the commit.
 */
export async function storeOrgEventMail(tx: Db, deps: WorkerDeps, events: EventToFanOut[]): Promise<DeliveryRequest[]> {
  const orgEvents = events.filter((ev) => isOrgEventType(ev.type));
  if (orgEvents.length === 0) return [];
  const from = deps.config.systemFrom ? parseMailbox(deps.config.systemFrom) : null;
  if (!from?.ok) {
    deps.logger.warn(
      { event: 'ORG_EVENT_MAIL_NO_SENDER', eventIds: orgEvents.map((e) => e.id) },
      'organization events not emailed: SYSTEM_FROM is not set',
    );
    return [];
  }
  const emails: NewEmail[] = [];
  const recipients: NewRecipient[] = [];
  for (const ev of orgEvents) {
    const domain = await senderDomain(tx, deps, ev.org_id, from.mailbox.domain, ev.id);
    if (!domain) continue;
    const admins = (await listOrgUsers(tx, ev.org_id)).filter((u) => u.role === 'admin');
    const data = buildEnvelope(ev).data as Data;
    const content = body(ev, data);
    for (const admin of admins) {
      const id = newId('em');
      emails.push(
        buildEmailRow({
          id,
          orgId: ev.org_id,
          keyId: null,
          mode: 'live',
          domain: { id: domain.id, name: domain.name },
          source: 'system',
          from: { address: deps.config.systemFrom!, email: from.mailbox.email },
          to: [admin.email],
          subject: content.subject,
          html: null,
          text: content.text,
          kind: 'system',
          tags: [
            { name: 'event', value: ev.type.replace('.', '_') },
            { name: 'event_id', value: ev.id },
          ],
        }),
      );
      const at = admin.email.lastIndexOf('@');
      recipients.push({
        id: newId('rcp'),
        email_id: id,
        org_id: ev.org_id,
        field: 'to',
        address: admin.email,
        email: admin.email.toLowerCase(),
        domain: admin.email.slice(at + 1).toLowerCase(),
        status: 'queued',
        wait_reason: null,
      });
    }
  }
  await insertEmails(tx, emails, recipients, []);
  // Alerts to people: the transactional stream, ahead of any broadcast backlog.
  return emails.map((e) => ({ emailId: e.id, orgId: e.org_id, stream: 'transactional', jobId: e.id }));
}

/** Enqueues the stored admin emails; a lost job is re-enqueued by the delivery sweeper. */
export async function enqueueOrgEventMail(deps: WorkerDeps, mail: DeliveryRequest[]): Promise<void> {
  if (mail.length === 0) return;
  deps.prom.inc('tern_emails_accepted_total', ['system', 'transactional'], mail.length);
  await enqueueMail(deps.queues, mail);
}
