// The `dmarc-report` queue: one job per mail to dmarc@bounces.<domain> (the `rua` of the record
// Tern suggests), handed on by the inbound worker. Steps: load → the reporter's hourly count
// (DMARC_REPORTER_HOURLY_MAX per reporting domain and organization; over it the mail is kept raw
// and skipped, DMARC_REPORT_RATE_LIMITED) → read on a parse thread (shared/mail/bounded-parse.ts:
// the MIME parse and the report's unpacking and XML, with the parse limits, off this event loop)
// → store for GET /domains/{id}/dmarc. A report about another domain, or one that cannot be read,
// is kept as a message with the reason in `error` and changes nothing else
// (DMARC_REPORT_REFUSED). A report the reporter sends twice is stored once. One job at a time
// per process: a flood of reports queues here, never in front of replies or deliveries.
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { ParsedMail } from 'mailparser';
import { insertDmarcReport } from '../shared/db/dmarc.js';
import {
  loadInboundRaw,
  markInboundFailed,
  markInboundUnparsed,
  saveParsedInbound,
  type InboundRow,
} from '../shared/db/inbound.js';
import { routeRecipient, type RcptRoute } from '../shared/inbound-routing.js';
import { parseLimits, ParseThreads } from '../shared/mail/bounded-parse.js';
import type { ReadResult } from '../shared/mail/dmarc-report.js';
import { QUEUE_NAMES, type DmarcReportJob, WORKER_RETRY } from '../shared/queues.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { markFailedWhenExhausted } from './inbound.js';
import { baseFields } from './inbound-parse.js';
import { logWorkerErrors } from './worker-errors.js';

function aboutDomain(policyDomain: string, domain: string): boolean {
  return policyDomain === domain || policyDomain.endsWith(`.${domain}`);
}

/** The reporting domain: the envelope sender's (a null sender counts as one reporter, `<>`). */
export function reporterOf(row: Pick<InboundRow, 'mail_from'>): string {
  const from = row.mail_from ?? '';
  return from.slice(from.lastIndexOf('@') + 1).toLowerCase() || '<>';
}

/** Counts this report against its reporter's hour; false when the reporter is over its limit. */
async function withinHourlyLimit(deps: WorkerDeps, orgId: string, reporter: string): Promise<boolean> {
  const key = deps.redisKeys.dmarcReporter(orgId, reporter, Math.floor(Date.now() / 3_600_000));
  const [[, n]] = (await deps.redis.multi().incr(key).expire(key, 3600).exec()) as [[unknown, number]];
  return n <= deps.config.dmarcReporterHourlyMax;
}

async function dmarcRecipient(deps: WorkerDeps, row: InboundRow): Promise<RcptRoute | null> {
  for (const rcpt of row.rcpt_to) {
    const r = await routeRecipient(deps, rcpt);
    if (r?.kind === 'dmarc' && r.orgId === row.org_id) return r;
  }
  return null;
}

export async function processDmarcReport(deps: WorkerDeps, parser: ParseThreads, inboundId: string): Promise<void> {
  const row = await loadInboundRaw(deps.sql, inboundId);
  if (!row) throw new UnrecoverableError(`inbound message ${inboundId} not found`);
  if (row.status !== 'stored' || !row.org_id) return;
  const rcpt = await dmarcRecipient(deps, row);
  if (!rcpt) {
    await markInboundFailed(deps.sql, inboundId, 'DMARC report refused: no dmarc@ recipient of a verified domain');
    return;
  }
  const reporter = reporterOf(row);
  const keep = (error: string) =>
    markInboundUnparsed(deps.sql, inboundId, { kind: 'dmarc_report', domainId: rcpt.domainId, error });
  if (!(await withinHourlyLimit(deps, row.org_id, reporter))) {
    const max = deps.config.dmarcReporterHourlyMax;
    await keep(`DMARC report skipped: ${reporter} sent more than ${max} reports this hour`);
    deps.prom.inc('tern_inbound_messages_total', ['unparsed']);
    deps.logger.warn(
      { event: 'DMARC_REPORT_RATE_LIMITED', inboundId, orgId: row.org_id, reporter, max },
      'DMARC report over its reporter’s hourly limit; kept raw, not read',
    );
    return;
  }
  const read = await parser.readDmarc(row.raw);
  if (read.type === 'over') {
    await keep(`not parsed: ${read.reason}`);
    deps.prom.inc('tern_inbound_messages_total', ['unparsed']);
    deps.logger.warn(
      { event: 'INBOUND_UNPARSED', inboundId, orgId: row.org_id, size: row.size, reason: read.reason },
      'DMARC report mail over the parse limits; kept raw, not parsed',
    );
    return;
  }
  if (read.type === 'failed') {
    await markInboundFailed(deps.sql, inboundId, read.reason);
    deps.prom.inc('tern_inbound_messages_total', ['failed']);
    return;
  }
  await storeDmarcReport(deps, { ...row, org_id: row.org_id }, read.mail, read.dmarc!, rcpt);
}

async function storeDmarcReport(
  deps: WorkerDeps,
  row: InboundRow & { org_id: string },
  mail: ParsedMail,
  read: ReadResult,
  rcpt: RcptRoute,
): Promise<void> {
  let error: string | null = read.ok ? null : `DMARC report refused: ${read.reason}`;
  if (read.ok && !aboutDomain(read.report.policy.domain!, rcpt.domainName)) {
    error = `DMARC report refused: it is about ${read.report.policy.domain}, not ${rcpt.domainName}`;
  }
  const stored = await deps.sql.begin(async (tx) => {
    // The attachments are the report itself, kept in dmarc_records: not stored twice.
    await saveParsedInbound(tx, row.id, {
      ...baseFields(mail),
      attachments: [],
      orgId: row.org_id,
      domainId: rcpt.domainId,
      kind: 'dmarc_report',
      emailId: null,
      error,
    });
    if (error || !read.ok) return false;
    return await insertDmarcReport(tx, {
      orgId: row.org_id,
      domainId: rcpt.domainId,
      inboundId: row.id,
      report: read.report,
    });
  });
  deps.prom.inc('tern_inbound_messages_total', ['dmarc_report']);
  if (error) {
    deps.logger.warn({ event: 'DMARC_REPORT_REFUSED', inboundId: row.id, reason: error }, 'DMARC report refused');
  } else if (read.ok) {
    deps.logger.info(
      { inboundId: row.id, domain: rcpt.domainName, reporter: read.report.reporter.name, duplicate: !stored },
      stored ? 'DMARC report stored' : 'DMARC report already stored',
    );
  }
}

export function startDmarcReportWorker(deps: WorkerDeps): Worker<DmarcReportJob> {
  const log = deps.logger.child({ queue: QUEUE_NAMES.dmarcReport });
  const parser = new ParseThreads(parseLimits(deps.config), 1);
  const worker = new Worker<DmarcReportJob>(
    QUEUE_NAMES.dmarcReport,
    async (job: Job<DmarcReportJob>) => await processDmarcReport(deps, parser, job.data.inboundId),
    { connection: deps.bull, prefix: deps.redisKeys.bullPrefix, ...WORKER_RETRY, concurrency: 1 },
  );
  worker.on('closed', () => void parser.close());
  markFailedWhenExhausted(deps, log, worker, 'DMARC_REPORT_FAILED');
  logWorkerErrors(worker, log, 'DMARC_REPORT_WORKER_ERROR');
  return worker;
}

export const dmarcReportConsumer: QueueConsumer = { queue: QUEUE_NAMES.dmarcReport, start: startDmarcReportWorker };
