// A received message (a reply on reply.<domain>, or a recipient of a domain with inbound
// enabled whose route delivers to webhooks or forwards): the sender's SPF/DKIM/DMARC (DNS, before
// the transaction), then in one transaction: threading, the forwarded copy, the stored fields
// (stripped_text, mailbox_hash, auth, attachments with their ids) and `email.received` when a
// recipient's route is the webhooks. After the commit the events are published and the forward
// is enqueued for delivery. With RSPAMD_URL the message is scored first (inbound-spam.ts): the
// verdict is stored and carried by `email.received`, and a route may refuse it above its threshold.
import { enqueueMail } from '../shared/queues.js';
import type { ParsedMail } from 'mailparser';
import { listOrgDomainNames } from '../shared/db/domains.js';
import {
  lockUnprocessedInbound,
  saveParsedInbound,
  type InboundRow,
  type ParsedInbound,
} from '../shared/db/inbound.js';
import { mailboxHashOf } from '../shared/domains/inbound-routes.js';
import { publishEvents, recordEvents, type EventRow } from '../shared/events.js';
import type { RcptRoute } from '../shared/inbound-routing.js';
import { authenticateInbound, type InboundAuth } from '../shared/mail/inbound-auth.js';
import { stripReply } from '../shared/mail/reply-text.js';
import { streamOf } from '../shared/prom/labels.js';
import type { WorkerDeps } from './deps.js';
import { createForward, type ForwardOutcome } from './inbound-forward.js';
import { scoreInbound, spamFilter } from './inbound-spam.js';
import type { SpamVerdict } from '../shared/mail/spam-score.js';
import { clean, thread, type BaseFields } from './inbound-parse.js';

/** The webhook carries at most this much of stripped_text; GET /inbound/{id} has all of it. */
export const WEBHOOK_STRIPPED_TEXT_CHARS = 100_000;

type Row = InboundRow & { raw: Buffer; org_id: string };

async function senderAuth(deps: WorkerDeps, row: Row): Promise<InboundAuth> {
  return await authenticateInbound({
    raw: row.raw,
    ip: row.remote_address,
    helo: row.helo,
    sender: row.mail_from,
    mta: deps.config.mxHost,
    dnsServers: deps.config.dnsServers,
  });
}

function receivedData(
  fields: BaseFields,
  extra: Pick<ParsedInbound, 'strippedText' | 'mailboxHash' | 'auth'> & { spam: SpamVerdict | null },
) {
  return {
    from: fields.fromAddress,
    to: fields.to,
    subject: fields.subject ?? '',
    auto_reply: fields.autoReply,
    stripped_text: (extra.strippedText ?? '').slice(0, WEBHOOK_STRIPPED_TEXT_CHARS),
    mailbox_hash: extra.mailboxHash ?? null,
    auth: extra.auth,
    attachments: fields.attachments.map((a) => ({
      id: a.id,
      filename: a.filename,
      content_type: a.contentType,
      size: a.content.length,
    })),
    ...(extra.spam ? { spam: extra.spam } : {}),
  };
}

export async function receiveMessage(
  deps: WorkerDeps,
  row: Row,
  mail: ParsedMail,
  fields: BaseFields,
  rcpts: RcptRoute[],
): Promise<EventRow[]> {
  const spam = await scoreInbound(deps, row);
  const { kept, refusal } = spamFilter(spam, rcpts);
  const webhook = kept.filter((r) => r.kind === 'reply' || r.route?.action === 'webhook');
  const forward = kept.filter((r) => r.route?.action === 'forward');
  const first = webhook[0] ?? forward[0] ?? null;
  const extra = {
    strippedText: clean(stripReply(fields.text ?? '')),
    mailboxHash: first ? clean(mailboxHashOf(first.address)) : null,
    auth: first ? await senderAuth(deps, row) : null,
    spam,
  };
  const kind: ParsedInbound['kind'] =
    webhook.length > 0 ? 'reply' : forward.length > 0 ? 'forward' : refusal ? 'spam' : 'dropped';
  let forwarded: ForwardOutcome | null = null;
  const events = await deps.sql.begin(async (tx) => {
    if (!(await lockUnprocessedInbound(tx, row.id))) return null;
    const emailId = await thread(tx, row.org_id, await listOrgDomainNames(tx, row.org_id), mail);
    if (forward.length > 0) forwarded = await createForward(tx, deps, row, mail, fields, forward);
    await saveParsedInbound(tx, row.id, {
      ...fields,
      ...extra,
      orgId: row.org_id,
      domainId: first?.domainId ?? row.domain_id,
      kind,
      emailId,
      route: first?.route ?? null,
      forwardEmailId: forwarded?.emailId ?? null,
      error: first ? (forwarded?.error ?? null) : (refusal ?? 'no recipient routes to a webhook or a forward any more'),
    });
    if (webhook.length === 0) return [];
    return await recordEvents(tx, [
      {
        orgId: row.org_id,
        mode: 'live',
        type: 'email.received',
        inboundId: row.id,
        emailId,
        domainId: first?.domainId ?? row.domain_id,
        dedupeKey: `${row.id}:received`,
        data: receivedData(fields, extra),
      },
    ]);
  });
  // Another run of the job stored this message first.
  if (events === null) return [];
  deps.prom.inc('tern_inbound_messages_total', [kind]);
  await publishEvents(
    deps.sql,
    deps.queues,
    events.map((e) => e.id),
  );
  const forwardEmailId = (forwarded as ForwardOutcome | null)?.emailId;
  if (forwardEmailId) {
    deps.prom.inc('tern_emails_accepted_total', ['forward', streamOf('forward')]);
    // A lost enqueue is not lost mail: the delivery sweeper enqueues queued emails without a job.
    const request = { emailId: forwardEmailId, orgId: row.org_id, stream: streamOf('forward'), jobId: forwardEmailId };
    await enqueueMail(deps.queues, [request]).catch((err: unknown) => {
      deps.logger.warn({ event: 'EMAIL_ENQUEUE_FAILED', err, emailIds: [forwardEmailId] }, 'forward not enqueued');
    });
  }
  return events;
}
