// Inbound consumer: one job per stored inbound message. Steps: load → parse (mailparser) →
// report? (DSN / ARF on the VERP return path → bounce / complaint events) : reply (thread via
// In-Reply-To / References, store, fire email.received). Re-running a job is harmless: the
// parsed fields are overwritten and events are recorded once (dedupe keys). A sweeper enqueues
// messages the MX stored but could not enqueue. Stops with worker.close().
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { simpleParser, type AddressObject, type ParsedMail, type SimpleParserOptions } from 'mailparser';
import { enqueueInbound } from '../api/smtp/mx-server.js';
import {
  findEmailByMessageId,
  findRecipient,
  loadInboundRaw,
  markInboundFailed,
  saveParsedInbound,
  staleStoredInbound,
  type InboundRow,
  type ParsedInbound,
} from '../shared/db/inbound.js';
import type { Db } from '../shared/db/pool.js';
import { publishEvents, recordEvents, type EventRow } from '../shared/events.js';
import { parseVerpToken } from '../shared/mail/verp.js';
import { detectReport, isAutoReply, looksLikeBounce } from '../shared/mail/reports.js';
import { QUEUE_NAMES, type InboundJob } from '../shared/queues.js';
import { recordTrackingHit } from '../shared/tracking.js';
import type { WorkerDeps } from './deps.js';
import { applyArf, applyDsn } from './inbound-reports.js';

function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((o) => o.value.map((v) => v.address ?? '').filter(Boolean));
}

function bare(id: string): string {
  return id.trim().replace(/^<|>$/g, '');
}

/** Message ids named by In-Reply-To, then References (newest first). */
function referencedIds(mail: ParsedMail): string[] {
  const refs = Array.isArray(mail.references) ? mail.references : mail.references ? [mail.references] : [];
  const ids = [...(mail.inReplyTo ? mail.inReplyTo.split(/\s+/) : []), ...refs.slice().reverse()];
  return [...new Set(ids.map(bare).filter(Boolean))];
}

/** The org's message a reply answers: an id whose domain is one of the org's domains. */
async function thread(db: Db, orgId: string, orgDomains: string[], mail: ParsedMail): Promise<string | null> {
  for (const id of referencedIds(mail)) {
    const domain = id.slice(id.lastIndexOf('@') + 1).toLowerCase();
    if (!orgDomains.includes(domain)) continue;
    const emailId = await findEmailByMessageId(db, orgId, id);
    if (emailId) return emailId;
  }
  return null;
}

/** Postgres text and jsonb refuse NUL characters, which binary garbage in a message carries. */
function clean(s: string): string;
function clean(s: string | null | undefined): string | null;
function clean(s: string | null | undefined): string | null {
  return s == null ? null : s.replaceAll('\u0000', '');
}

function baseFields(mail: ParsedMail): Omit<ParsedInbound, 'orgId' | 'domainId' | 'kind' | 'emailId'> {
  return {
    fromAddress: clean(addresses(mail.from)[0]),
    to: addresses(mail.to).map((a) => clean(a)),
    cc: addresses(mail.cc).map((a) => clean(a)),
    subject: clean(mail.subject),
    text: clean(mail.text),
    html: typeof mail.html === 'string' ? clean(mail.html) : null,
    headers: mail.headerLines.map((h) => ({
      key: clean(h.key),
      value: clean(h.line.slice(h.line.indexOf(':') + 1).trim()),
    })),
    messageId: mail.messageId ? clean(bare(mail.messageId)) : null,
    inReplyTo: mail.inReplyTo ? clean(bare(mail.inReplyTo)) : null,
    autoReply: isAutoReply(mail),
    attachments: mail.attachments.map((a) => ({
      filename: clean(a.filename),
      contentType: clean(a.contentType),
      contentId: clean(a.cid),
      content: a.content,
    })),
  };
}

/** SQLSTATE classes that no retry can fix: data exceptions (22) and program limits (54). */
function isPermanentDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|54)/.test(code);
}

/** Recipients named by envelope tokens: b+<token> (VERP return path) or u+<token> (unsubscribe). */
function tokenRecipients(row: InboundRow, secret: string, tag: 'b' | 'u'): string[] {
  const ids: string[] = [];
  for (const rcpt of row.rcpt_to) {
    const m = new RegExp(`^${tag}\\+(.+)@bounces\\.`, 'i').exec(rcpt);
    const parsed = m ? parseVerpToken(m[1]!, secret) : null;
    if (parsed) ids.push(parsed);
  }
  return ids;
}

async function orgDomainNames(db: Db, orgId: string): Promise<string[]> {
  const rows = await db<{ name: string }[]>`select name from domains where org_id = ${orgId}`;
  return rows.map((r) => r.name);
}

export async function processInbound(deps: WorkerDeps, inboundId: string): Promise<EventRow[]> {
  const row = await loadInboundRaw(deps.sql, inboundId);
  if (!row) throw new UnrecoverableError(`inbound message ${inboundId} not found`);
  if (row.status === 'processed') return [];
  if (!row.org_id) {
    await markInboundFailed(deps.sql, inboundId, 'no organization: no recipient matched a verified domain');
    return [];
  }
  let mail: ParsedMail;
  try {
    // keepDeliveryStatus: the delivery-status part stays an attachment instead of body text.
    mail = await simpleParser(row.raw, { keepDeliveryStatus: true } as SimpleParserOptions);
  } catch (err) {
    // The same bytes fail the same way next time: record why and do not retry.
    await markInboundFailed(deps.sql, inboundId, `unparseable message: ${(err as Error).message}`);
    return [];
  }
  try {
    return await handleParsed(deps, { ...row, org_id: row.org_id }, mail);
  } catch (err) {
    if (!isPermanentDbError(err)) throw err;
    await markInboundFailed(deps.sql, inboundId, `cannot store the parsed message: ${(err as Error).message}`);
    throw new UnrecoverableError((err as Error).message);
  }
}

async function handleParsed(
  deps: WorkerDeps,
  row: InboundRow & { raw: Buffer; org_id: string },
  mail: ParsedMail,
): Promise<EventRow[]> {
  const inboundId = row.id;
  const orgId = row.org_id;
  const fields = baseFields(mail);
  const verp = tokenRecipients(row, deps.config.secretKey, 'b');
  const unsubscribes = tokenRecipients(row, deps.config.secretKey, 'u');
  const report = detectReport(mail, row.raw);

  if (unsubscribes.length > 0 && !report) return await unsubscribeByMail(deps, inboundId, row, fields, unsubscribes);
  const events = await deps.sql.begin(async (tx) => {
    if (verp.length > 0 || report) {
      const out: EventRow[] = [];
      let kind: ParsedInbound['kind'] = 'dropped';
      if (report?.kind === 'dsn') {
        kind = 'bounce';
        for (const id of verp) out.push(...(await applyDsn(tx, orgId, id, report.recipients, inboundId)));
      } else if (report?.kind === 'arf') {
        kind = 'complaint';
        for (const id of verp.length ? verp : [null]) {
          out.push(...(await applyArf(tx, orgId, id, report, inboundId, deps.config.secretKey)));
        }
      } else if (looksLikeBounce(mail)) {
        // A bounce without a delivery-status part: the recipient is known, the reason is not.
        kind = 'bounce';
        for (const id of verp) out.push(...(await applyDsn(tx, orgId, id, [], inboundId)));
      }
      // Anything else to a VERP address (an out-of-office reply) is kept and fires nothing.
      await saveParsedInbound(tx, inboundId, { ...fields, orgId, domainId: row.domain_id, kind, emailId: null });
      return out;
    }
    const emailId = await thread(tx, orgId, await orgDomainNames(tx, orgId), mail);
    await saveParsedInbound(tx, inboundId, { ...fields, orgId, domainId: row.domain_id, kind: 'reply', emailId });
    return await recordEvents(tx, [
      {
        orgId,
        mode: 'live',
        type: 'email.received',
        inboundId,
        emailId,
        domainId: row.domain_id,
        dedupeKey: `${inboundId}:received`,
        data: { from: fields.fromAddress, to: fields.to, subject: fields.subject ?? '', auto_reply: fields.autoReply },
      },
    ]);
  });
  await publishEvents(
    deps.sql,
    deps.queues,
    events.map((e) => e.id),
  );
  return events;
}

/** A mail to the List-Unsubscribe mailto: the same unsubscribe as the one-click link. */
async function unsubscribeByMail(
  deps: WorkerDeps,
  inboundId: string,
  row: InboundRow,
  fields: ReturnType<typeof baseFields>,
  recipientIds: string[],
): Promise<EventRow[]> {
  for (const recipientId of recipientIds) {
    const r = await findRecipient(deps.sql, recipientId);
    if (r && r.orgId === row.org_id) {
      await recordTrackingHit(deps, { kind: 'u', emailId: r.emailId, recipientId });
    }
  }
  await saveParsedInbound(deps.sql, inboundId, {
    ...fields,
    orgId: row.org_id,
    domainId: row.domain_id,
    kind: 'unsubscribe',
    emailId: null,
  });
  return [];
}

export interface InboundWorkerOptions {
  /** How often the sweeper looks for stored messages without a job. */
  sweepEveryMs?: number;
  /** How old a stored message must be before the sweeper takes it for lost. */
  staleAfterMs?: number;
}

export function startInboundWorker(deps: WorkerDeps, opts: InboundWorkerOptions = {}): Worker<InboundJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.inbound });
  const worker = new Worker<InboundJob>(
    QUEUE_NAMES.inbound,
    async (job: Job<InboundJob>) => {
      const events = await processInbound(deps, job.data.inboundId);
      return { events: events.length };
    },
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, concurrency: 8 },
  );
  worker.on('failed', (job, err) => {
    log.warn({ event: 'INBOUND_PROCESS_FAILED', err, inboundId: job?.data.inboundId }, 'inbound message failed');
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      markInboundFailed(deps.sql, job.data.inboundId, err.message).catch(() => {});
    }
  });
  worker.on('error', (err) => log.error({ event: 'INBOUND_WORKER_ERROR', err }, 'inbound worker error'));
  const timer = setInterval(() => {
    staleStoredInbound(deps.sql, opts.staleAfterMs ?? 60_000, 500)
      .then((ids) => (ids.length ? enqueueInbound({ queues: deps.queues, logger: log }, ids) : undefined))
      .catch((err: unknown) => log.warn({ event: 'INBOUND_SWEEP_FAILED', err }, 'inbound sweep failed'));
  }, opts.sweepEveryMs ?? 60_000);
  timer.unref();
  worker.on('closing', () => clearInterval(timer));
  return worker;
}
