// A mail to dmarc@bounces.<domain>: a DMARC aggregate report about <domain> (the `rua` of the
// record Tern suggests). Its zip, gzip or XML attachment is read with bounds
// (shared/mail/dmarc-report.ts) and stored for GET /domains/{id}/dmarc; a report about another
// domain, or one that cannot be read, is kept as a message with the reason in `error` and
// changes nothing else (DMARC_REPORT_REFUSED). A report the reporter sends twice is stored once.
import type { ParsedMail } from 'mailparser';
import { insertDmarcReport } from '../shared/db/dmarc.js';
import { saveParsedInbound, type InboundRow } from '../shared/db/inbound.js';
import type { RcptRoute } from '../shared/inbound-routing.js';
import { readDmarcReport, reportPart } from '../shared/mail/dmarc-report.js';
import type { WorkerDeps } from './deps.js';
import type { BaseFields } from './inbound-parse.js';

function aboutDomain(policyDomain: string, domain: string): boolean {
  return policyDomain === domain || policyDomain.endsWith(`.${domain}`);
}

export async function receiveDmarcReport(
  deps: WorkerDeps,
  row: InboundRow & { org_id: string },
  mail: ParsedMail,
  fields: BaseFields,
  rcpt: RcptRoute,
): Promise<void> {
  const part = reportPart(
    mail.attachments.map((a) => ({ filename: a.filename ?? null, contentType: a.contentType, content: a.content })),
  );
  const read = part ? readDmarcReport(part) : { ok: false as const, reason: 'no zip, gzip or XML attachment' };
  let error: string | null = read.ok ? null : `DMARC report refused: ${read.reason}`;
  if (read.ok && !aboutDomain(read.report.policy.domain!, rcpt.domainName)) {
    error = `DMARC report refused: it is about ${read.report.policy.domain}, not ${rcpt.domainName}`;
  }
  const stored = await deps.sql.begin(async (tx) => {
    // The attachments are the report itself, kept in dmarc_records: not stored twice.
    await saveParsedInbound(tx, row.id, {
      ...fields,
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
