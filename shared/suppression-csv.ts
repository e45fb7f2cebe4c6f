// Suppressions as CSV, one reading for the API (POST /suppressions/imports, GET /suppressions/export)
// and the console. An import row is an address or a rule (`*@example.com`), optionally with a
// domain (name or id; blank = the whole organization) and a reason; a header row names the columns,
// or the file is a bare list of addresses. The export writes the columns the import reads back.
import type { CsvRecord } from './csv/read.js';
import {
  bulkAddSuppressions,
  suppressionBatches,
  type BulkSuppression,
  type SuppressionFilter,
  type SuppressionReason,
  type SuppressionRow,
  type SuppressionScope,
} from './db/suppressions.js';
import type { Db, TxSql } from './db/pool.js';
import { validationError } from './errors.js';
import { parseAddress } from './mail/addresses.js';
import { looksLikePattern, parseSuppressionPattern } from './suppression-patterns.js';

export const SUPPRESSION_IMPORT_MAX_ROWS = 1_000_000;
export const SUPPRESSION_REASONS: readonly SuppressionReason[] = ['hard_bounce', 'complaint', 'unsubscribe', 'manual'];
export const SUPPRESSION_CSV_COLUMNS = ['email', 'pattern', 'domain', 'reason', 'source_email_id', 'created_at', 'id'];
const BATCH_ROWS = 5000;
/** Failed rows listed in a summary (all of them are counted). */
const ERRORS_SHOWN = 1000;

/** What an import may touch, and what a row without a domain or reason cell gets. */
export interface ImportScope {
  /** The organization's domains: a row's domain cell must name one of them. */
  domains: readonly { id: string; name: string }[];
  /** A domain-restricted key's domains (its rows must name one); null for an unrestricted caller. */
  restrictedTo: readonly string[] | null;
  domainId: string | null;
  reason: SuppressionReason;
}

export interface RowError {
  line: number;
  value: string;
  message: string;
}

export interface ImportSummary {
  rows: number;
  created: number;
  existing: number;
  failed: number;
  errors: RowError[];
}

interface Columns {
  email: number | null;
  pattern: number | null;
  domain: number | null;
  reason: number | null;
}

/** The header's columns, or null when the first record is data (a bare list of addresses). */
function columnsOf(header: string[]): Columns | null {
  const names = header.map((h) => h.trim().toLowerCase());
  const at = (...wanted: string[]) => {
    const i = names.findIndex((n) => wanted.includes(n));
    return i === -1 ? null : i;
  };
  const cols = {
    email: at('email', 'address', 'email_address'),
    pattern: at('pattern'),
    domain: at('domain'),
    reason: at('reason'),
  };
  if (cols.email === null && cols.pattern === null) return null;
  return cols;
}

/** One address or rule as a row to add, or why it is not one (the phrase follows "it"). */
export function readSuppressionValue(
  value: string,
  asPattern = false,
): { ok: true; email: string | null; pattern: BulkSuppression['pattern'] } | { ok: false; message: string } {
  if (value.includes('\u0000')) return { ok: false, message: 'contains a NUL character' };
  if (asPattern || looksLikePattern(value)) {
    const p = parseSuppressionPattern(value);
    return p.ok
      ? { ok: true, email: null, pattern: p.value }
      : { ok: false, message: `is not a valid pattern: it ${p.reason}` };
  }
  const a = parseAddress(value);
  return a.ok
    ? { ok: true, email: a.mailbox.email, pattern: null }
    : { ok: false, message: `is not a valid address: it ${a.reason}` };
}

function readRow(rec: CsvRecord, cols: Columns, s: ImportScope): BulkSuppression | RowError {
  const cell = (i: number | null) => (i === null ? '' : (rec.cells[i] ?? '').trim());
  const email = cell(cols.email);
  const given = cell(cols.pattern);
  const value = email || given;
  const fail = (message: string): RowError => ({ line: rec.line, value: value.slice(0, 320), message });
  if (rec.cells.some((c) => c.includes('\u0000'))) return fail('contains a NUL character');
  if (email && given) return fail('has both an address and a pattern; give one per row');
  if (!value) return fail('has no address or pattern');
  let domainId = s.domainId;
  const domainRef = cell(cols.domain);
  if (domainRef) {
    const found = s.domains.find((x) => x.id === domainRef || x.name === domainRef.toLowerCase());
    if (!found) return fail(`names the domain "${domainRef}", which is not a domain of this organization`);
    domainId = found.id;
  }
  if (s.restrictedTo && (domainId === null || !s.restrictedTo.includes(domainId))) {
    return fail("needs a domain of this key's own (a domain-restricted key adds no organization-wide rows)");
  }
  const reasonCell = cell(cols.reason).toLowerCase();
  if (reasonCell && !SUPPRESSION_REASONS.includes(reasonCell as SuppressionReason)) {
    return fail(`has the reason "${reasonCell}"; use one of ${SUPPRESSION_REASONS.join(', ')}`);
  }
  const reason = (reasonCell as SuppressionReason) || s.reason;
  const v = readSuppressionValue(value, given !== '');
  return v.ok ? { email: v.email, pattern: v.pattern, domainId, reason } : fail(v.message);
}

/**
 * Adds the rows of `records` in batches of one statement each, inside the caller's transaction;
 * bad rows are counted and listed (the first ERRORS_SHOWN) and left out. The caller decides
 * whether a file with bad rows commits (the API) or rolls back whole (the console).
 */
export async function importSuppressions(
  tx: TxSql,
  orgId: string,
  records: AsyncIterable<CsvRecord>,
  scope: ImportScope,
): Promise<ImportSummary> {
  const s: ImportSummary = { rows: 0, created: 0, existing: 0, failed: 0, errors: [] };
  let cols: Columns | undefined;
  let batch: BulkSuppression[] = [];
  const flush = async () => {
    const added = await bulkAddSuppressions(tx, orgId, batch);
    s.created += added;
    s.existing += batch.length - added;
    batch = [];
  };
  for await (const rec of records) {
    if (cols === undefined) {
      const header = columnsOf(rec.cells);
      cols = header ?? { email: 0, pattern: null, domain: null, reason: null };
      if (header) continue;
    }
    if (++s.rows > SUPPRESSION_IMPORT_MAX_ROWS) {
      throw validationError(`the file has more than ${SUPPRESSION_IMPORT_MAX_ROWS} rows; split it`);
    }
    const row = readRow(rec, cols, scope);
    if ('message' in row) {
      s.failed++;
      if (s.errors.length < ERRORS_SHOWN) s.errors.push(row);
      continue;
    }
    batch.push(row);
    if (batch.length >= BATCH_ROWS) await flush();
  }
  if (batch.length > 0) await flush();
  return s;
}

/** The rows `scope` may see as CSV records in SUPPRESSION_CSV_COLUMNS, read a batch at a time. */
export async function* suppressionRecords(
  db: Db,
  orgId: string,
  scope: SuppressionScope,
  filter: SuppressionFilter,
  domains: readonly { id: string; name: string }[],
): AsyncGenerator<string[]> {
  const names = new Map(domains.map((d) => [d.id, d.name]));
  const cells = (s: SuppressionRow) => [
    s.email ?? '',
    s.pattern ?? '',
    s.domain_id === null ? '' : (names.get(s.domain_id) ?? s.domain_id),
    s.reason,
    s.source_email_id ?? '',
    s.created_at.toISOString(),
    s.id,
  ];
  for await (const rows of suppressionBatches(db, orgId, scope, filter)) for (const r of rows) yield cells(r);
}
