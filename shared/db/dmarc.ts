// DMARC aggregate reports: stored by the inbound worker, summarised by GET /domains/{id}/dmarc.
// The records go in through unnest, one array per column (shared/db/unnest.ts).
import { newId } from '../ids.js';
import type { DmarcReport } from '../mail/dmarc-report.js';
import type { Db } from './pool.js';
import { unnestRows } from './unnest.js';

const RECORD_COLUMNS = {
  report_id: 'text',
  position: 'integer',
  source_ip: 'text',
  messages: 'integer',
  disposition: 'text',
  dkim_aligned: 'boolean',
  spf_aligned: 'boolean',
  header_from: 'text',
  envelope_from: 'text',
  auth: 'jsonb',
} as const;

/** Stores a report and its records; false when the reporter already sent this report id. */
export async function insertDmarcReport(
  db: Db,
  r: { orgId: string; domainId: string; inboundId: string; report: DmarcReport },
): Promise<boolean> {
  const id = newId('dmr');
  const rep = r.report;
  const messages = rep.records.reduce((n, x) => n + x.count, 0);
  const inserted = await db`
    insert into dmarc_reports (id, org_id, domain_id, inbound_id, reporter_name, reporter_email, report_id,
                               begin_at, end_at, policy, messages)
    values (${id}, ${r.orgId}, ${r.domainId}, ${r.inboundId}, ${rep.reporter.name}, ${rep.reporter.email},
            ${rep.reportId}, ${rep.begin}, ${rep.end}, ${db.json(rep.policy)}, ${messages})
    on conflict (domain_id, reporter_name, report_id) do nothing
    returning id`;
  if (inserted.length === 0) return false;
  const recs = rep.records;
  if (recs.length === 0) return true;
  const u = unnestRows(
    db,
    recs.map((x, i) => ({
      report_id: id,
      position: i,
      source_ip: x.sourceIp,
      messages: x.count,
      disposition: x.disposition,
      dkim_aligned: x.dkimAligned,
      spf_aligned: x.spfAligned,
      header_from: x.headerFrom,
      envelope_from: x.envelopeFrom,
      auth: JSON.stringify(x.auth),
    })),
    RECORD_COLUMNS,
  );
  await db`insert into dmarc_records (${u.columns}) ${u.select}`;
  return true;
}

export interface DmarcSourceRow {
  ip: string;
  messages: number;
  spf_aligned: number;
  dkim_aligned: number;
  none: number;
  quarantine: number;
  reject: number;
  reporters: string[];
}

export interface DmarcReporterRow {
  name: string;
  email: string | null;
  reports: number;
  messages: number;
}

/** Reports whose period ended within the last `days` days. */
function window(db: Db, domainId: string, days: number) {
  return db`r.domain_id = ${domainId} and r.end_at > now() - make_interval(days => ${days})`;
}

/** Messages per source IP (most first), with their alignment and dispositions. */
export async function dmarcSources(db: Db, domainId: string, days: number, limit = 500): Promise<DmarcSourceRow[]> {
  return await db<DmarcSourceRow[]>`
    select x.source_ip as ip, sum(x.messages)::float8 as messages,
           coalesce(sum(x.messages) filter (where x.spf_aligned), 0)::float8 as spf_aligned,
           coalesce(sum(x.messages) filter (where x.dkim_aligned), 0)::float8 as dkim_aligned,
           coalesce(sum(x.messages) filter (where x.disposition = 'none'), 0)::float8 as none,
           coalesce(sum(x.messages) filter (where x.disposition = 'quarantine'), 0)::float8 as quarantine,
           coalesce(sum(x.messages) filter (where x.disposition = 'reject'), 0)::float8 as reject,
           array_agg(distinct r.reporter_name collate "C" order by r.reporter_name collate "C") as reporters
    from dmarc_records x join dmarc_reports r on r.id = x.report_id
    where ${window(db, domainId, days)}
    group by x.source_ip
    order by sum(x.messages) desc, x.source_ip
    limit ${limit}`;
}

export async function dmarcReporters(db: Db, domainId: string, days: number): Promise<DmarcReporterRow[]> {
  return await db<DmarcReporterRow[]>`
    select r.reporter_name as name, max(r.reporter_email) as email, count(*)::int as reports,
           sum(r.messages)::float8 as messages
    from dmarc_reports r
    where ${window(db, domainId, days)}
    group by r.reporter_name
    order by sum(r.messages) desc, r.reporter_name`;
}
