// Inbound consumer: one job per stored inbound message. Steps: load → parse (mailparser on a
// parse thread with limits, shared/mail/bounded-parse.ts; a message over them is kept raw and
// marked `unparsed`) → route each recipient again (shared/inbound-routing.ts) → one of:
// unsubscribe (the List-Unsubscribe mailto); report (DSN / ARF on the VERP or SRS return path →
// bounce / complaint events); DMARC aggregate report (handed to its own queue, dmarc-report.ts);
// received message (inbound-received.ts: thread, store, email.received and/or forward).
// Re-running a job is harmless: the parsed fields are overwritten and events are recorded once
// (dedupe keys). A sweeper enqueues messages the MX stored but could not enqueue. Stops with
// worker.close() (its parse threads end with it).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { ParsedMail } from 'mailparser';
import {
  findRecipient,
  forwardRecipientsByEnvelope,
  loadInboundRaw,
  lockUnprocessedInbound,
  markInboundDmarc,
  markInboundFailed,
  markInboundUnparsed,
  saveParsedInbound,
  staleStoredInbound,
  type InboundRow,
  type ParsedInbound,
} from '../shared/db/inbound.js';
import type { Db } from '../shared/db/pool.js';
import { publishEvents, type EventRow } from '../shared/events.js';
import { enqueueInbound } from '../shared/inbound-jobs.js';
import { routeRecipient, type RcptRoute } from '../shared/inbound-routing.js';
import { parseLimits, ParseThreads } from '../shared/mail/bounded-parse.js';
import { parseVerpToken } from '../shared/mail/verp.js';
import { detectReport, looksLikeBounce, type DsnRecipient } from '../shared/mail/reports.js';
import { QUEUE_NAMES, TAKEOVER_LOCKS, type InboundJob, WORKER_RETRY } from '../shared/queues.js';
import { recordTrackingHit } from '../shared/tracking.js';
import type { WorkerDeps } from './deps.js';
import { runEvery } from './periodic.js';
import { baseFields, type BaseFields } from './inbound-parse.js';
import { applyArf, applyDsn } from './inbound-reports.js';
import { receiveMessage } from './inbound-received.js';
import { logWorkerErrors } from './worker-errors.js';

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

export async function processInbound(deps: WorkerDeps, parser: ParseThreads, inboundId: string): Promise<EventRow[]> {
  const row = await loadInboundRaw(deps.sql, inboundId);
  if (!row) throw new UnrecoverableError(`inbound message ${inboundId} not found`);
  if (row.status === 'processed' || row.status === 'unparsed') return [];
  if (!row.org_id) {
    await markInboundFailed(deps.sql, inboundId, 'no organization: no recipient matched a verified domain');
    deps.prom.inc('tern_inbound_messages_total', ['failed']);
    return [];
  }
  const parsed = await parser.parseMime(row.raw);
  if (parsed.type === 'over') {
    await keepUnparsed(deps, row, parsed.reason);
    return [];
  }
  if (parsed.type === 'failed') {
    // The same bytes fail the same way next time: record why and do not retry.
    await markInboundFailed(deps.sql, inboundId, parsed.reason);
    deps.prom.inc('tern_inbound_messages_total', ['failed']);
    return [];
  }
  try {
    return await handleParsed(deps, { ...row, org_id: row.org_id }, parsed.mail);
  } catch (err) {
    if (!isPermanentDbError(err)) throw err;
    await markInboundFailed(deps.sql, inboundId, `cannot store the parsed message: ${(err as Error).message}`);
    deps.prom.inc('tern_inbound_messages_total', ['failed']);
    throw new UnrecoverableError((err as Error).message);
  }
}

/**
 * A message over the parse limits: kept raw and marked `unparsed` with the reason. A reply or a
 * routed message keeps its kind (`reply`) so that the inbound list shows it with the reason.
 */
async function keepUnparsed(deps: WorkerDeps, row: InboundRow, reason: string): Promise<void> {
  const rcpts = await routeAll(deps, row);
  const received = rcpts.find((r) => r.kind === 'reply' || r.kind === 'routed');
  const error = `not parsed: ${reason}`;
  await markInboundUnparsed(deps.sql, row.id, {
    kind: received ? 'reply' : null,
    domainId: (received ?? rcpts[0])?.domainId ?? null,
    error,
  });
  deps.prom.inc('tern_inbound_messages_total', ['unparsed']);
  deps.logger.warn(
    { event: 'INBOUND_UNPARSED', inboundId: row.id, orgId: row.org_id, size: row.size, reason },
    'inbound message over the parse limits; kept raw, not parsed',
  );
}

/** Every stored recipient routed again (the route decides what happens); refused ones drop out. */
async function routeAll(deps: WorkerDeps, row: InboundRow): Promise<RcptRoute[]> {
  const out: RcptRoute[] = [];
  for (const rcpt of row.rcpt_to) {
    const r = await routeRecipient(deps, rcpt);
    if (r && r.orgId === row.org_id) out.push(r);
  }
  return out;
}

/**
 * The forwarded copies a bounce to an SRS address is about: per SRS recipient, the copy's recipient
 * the report names, else the newest copy sent with that address.
 */
async function srsRecipients(tx: Db, orgId: string, rcpts: RcptRoute[], named: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const r of rcpts.filter((x) => x.kind === 'srs')) {
    const copies = await forwardRecipientsByEnvelope(tx, orgId, r.address);
    const hit = copies.find((c) => named.includes(c.email)) ?? copies[0];
    if (hit) ids.push(hit.id);
  }
  return ids;
}

async function handleParsed(
  deps: WorkerDeps,
  row: InboundRow & { raw: Buffer; org_id: string },
  mail: ParsedMail,
): Promise<EventRow[]> {
  const inboundId = row.id;
  const orgId = row.org_id;
  const fields = baseFields(mail);
  const rcpts = await routeAll(deps, row);
  const verp = tokenRecipients(row, deps.config.secretKey, 'b');
  const unsubscribes = tokenRecipients(row, deps.config.secretKey, 'u');
  const report = detectReport(mail, row.raw);
  const srs = rcpts.some((r) => r.kind === 'srs');

  if (unsubscribes.length > 0 && !report) return await unsubscribeByMail(deps, inboundId, row, fields, unsubscribes);
  if (verp.length > 0 || srs || report) {
    const named = report?.kind === 'dsn' ? report.recipients.flatMap(dsnAddresses) : [];
    return await bounceOrComplaint(deps, row, mail, fields, report, verp, (tx) =>
      srsRecipients(tx, orgId, rcpts, named),
    );
  }
  const dmarc = rcpts.find((r) => r.kind === 'dmarc');
  if (dmarc) {
    // Read on a queue of its own (workers/dmarc-report.ts): on a parse thread, and rate-limited per reporter.
    await markInboundDmarc(deps.sql, inboundId, dmarc.domainId);
    await enqueueInbound({ queues: deps.queues, logger: deps.logger }, [inboundId], 'dmarc-report');
    return [];
  }
  return await receiveMessage(deps, row, mail, fields, rcpts);
}

function dsnAddresses(r: DsnRecipient): string[] {
  return [r.finalRecipient, r.originalRecipient].filter((a): a is string => !!a).map((a) => a.toLowerCase());
}

/** DSNs and ARF reports (VERP or SRS return path): bounce and complaint events. */
async function bounceOrComplaint(
  deps: WorkerDeps,
  row: InboundRow & { org_id: string },
  mail: ParsedMail,
  fields: BaseFields,
  report: ReturnType<typeof detectReport>,
  verpIds: string[],
  forwardIds: (tx: Db) => Promise<string[]>,
): Promise<EventRow[]> {
  const { id: inboundId, org_id: orgId } = row;
  let kind: ParsedInbound['kind'] = 'dropped';
  const events = await deps.sql.begin(async (tx) => {
    if (!(await lockUnprocessedInbound(tx, inboundId))) return null;
    const verp = [...verpIds, ...(await forwardIds(tx))];
    const out: EventRow[] = [];
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
  });
  // Another run of the job stored this message first.
  if (events === null) return [];
  deps.prom.inc('tern_inbound_messages_total', [kind]);
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
  fields: BaseFields,
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
  deps.prom.inc('tern_inbound_messages_total', ['unsubscribe']);
  return [];
}

/**
 * Logs each failed attempt as `event`; a message whose job is out of attempts is marked failed
 * (a job id stays taken while its failed job is kept, so the sweeper could not enqueue it again).
 */
export function markFailedWhenExhausted(
  deps: WorkerDeps,
  log: WorkerDeps['logger'],
  worker: Worker<{ inboundId: string }>,
  event: string,
): void {
  worker.on('failed', (job, err) => {
    log.warn({ event, err, inboundId: job?.data.inboundId }, 'inbound message failed');
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      markInboundFailed(deps.sql, job.data.inboundId, err.message).catch((markErr: unknown) =>
        log.warn(
          { event: 'INBOUND_MARK_FAILED', err: markErr, inboundId: job.data.inboundId },
          'inbound message not marked failed; the inbound sweeper will pick it up again',
        ),
      );
    }
  });
}

/** Inbound jobs one worker process runs at once. */
const INBOUND_CONCURRENCY = 8;

export interface InboundWorkerOptions {
  /** How often the sweeper looks for stored messages without a job. */
  sweepEveryMs?: number;
  /** How old a stored message must be before the sweeper takes it for lost. */
  staleAfterMs?: number;
}

export function startInboundWorker(deps: WorkerDeps, opts: InboundWorkerOptions = {}): Worker<InboundJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.inbound });
  // One parse thread per job slot: a message at its time limit holds only its own slot.
  const parser = new ParseThreads(parseLimits(deps.config), INBOUND_CONCURRENCY);
  const worker = new Worker<InboundJob>(
    QUEUE_NAMES.inbound,
    async (job: Job<InboundJob>) => {
      const events = await processInbound(deps, parser, job.data.inboundId);
      return { events: events.length };
    },
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency: INBOUND_CONCURRENCY,
      ...TAKEOVER_LOCKS,
    },
  );
  worker.on('closed', () => void parser.close());
  markFailedWhenExhausted(deps, log, worker, 'INBOUND_PROCESS_FAILED');
  logWorkerErrors(worker, log, 'INBOUND_WORKER_ERROR');
  const stop = runEvery(
    opts.sweepEveryMs ?? 60_000,
    async () => {
      const rows = await staleStoredInbound(deps.sql, opts.staleAfterMs ?? 60_000, 500);
      const ids = (dmarc: boolean) => rows.filter((r) => (r.kind === 'dmarc_report') === dmarc).map((r) => r.id);
      await enqueueInbound({ queues: deps.queues, logger: log }, ids(false));
      await enqueueInbound({ queues: deps.queues, logger: log }, ids(true), 'dmarc-report');
    },
    (err) => log.warn({ event: 'INBOUND_SWEEP_FAILED', err }, 'inbound sweep failed'),
  );
  worker.on('closing', stop);
  return worker;
}
