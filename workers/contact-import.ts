// A contact import, run by one job of the `contact-bulk` queue: claim (a lease in Postgres, so
// two jobs of one import never run it at once) → count (the whole file is read once: valid CSV,
// at most IMPORT_MAX_ROWS rows, or the import fails before any row is applied) → apply the rows
// after those already settled, BATCH_ROWS at a time, each batch in one transaction with its
// counts, its failed rows and the lease's renewal → finish (the file is removed). A worker that
// dies mid-way leaves the settled count where its last batch put it; the next job resumes there.
import { randomUUID } from 'node:crypto';
import {
  isFailure,
  readContactRow,
  resolveMapping,
  type ImportRow,
  type ResolvedMapping,
} from '../shared/contact-import-mapping.js';
import { CsvError, csvProblem, readCsv, type CsvRecord } from '../shared/csv/read.js';
import {
  applyContactRows,
  claimImport,
  finishImport,
  recordBatch,
  setTotalRows,
  type BatchCounts,
  type ImportRowRecord,
  type RowError,
} from '../shared/db/contact-imports.js';
import { readChunks } from '../shared/db/file-chunks.js';
import type { TxSql } from '../shared/db/pool.js';
import { isUnavailable } from '../shared/errors.js';
import { findSuppressedEmails } from '../shared/db/suppressions.js';
import type { WorkerDeps } from './deps.js';

export const IMPORT_MAX_ROWS = 1_000_000;
export const LEASE_SECONDS = 60;
const BATCH_ROWS = 5000;

/** The import cannot go on (not CSV, too many rows, a column gone): it fails with this message. */
class ImportFailure extends Error {}
/** Another worker took the import over (this one was too slow to renew its lease). */
class LeaseLost extends Error {}

export type ImportOutcome = 'completed' | 'failed' | 'busy' | 'lost';

export interface ImportOptions {
  batchRows?: number;
  /** Called after each committed batch (tests stop a worker half-way with it). */
  afterBatch?: (settled: number) => Promise<void> | void;
}

async function* records(deps: WorkerDeps, row: ImportRowRecord): AsyncGenerator<CsvRecord> {
  try {
    yield* readCsv(readChunks(deps.sql, row.id, row.file_chunks));
  } catch (err) {
    if (err instanceof CsvError) throw new ImportFailure(`line ${String(err.lines)}: ${csvProblem(err)}`);
    throw err;
  }
}

/** Reads the whole file once; the data rows it holds. */
async function countRows(deps: WorkerDeps, row: ImportRowRecord): Promise<number> {
  let n = -1; // the header row
  for await (const _ of records(deps, row)) {
    if (++n > IMPORT_MAX_ROWS) throw new ImportFailure(`the file has more than ${IMPORT_MAX_ROWS} rows; split it`);
  }
  return Math.max(0, n);
}

const same = (a: ImportRow, b: ImportRow) => JSON.stringify(a) === JSON.stringify(b);

/** A later row of the same address, applied on top of an earlier one of the same batch. */
function merge(prev: ImportRow, next: ImportRow): ImportRow {
  const topics = new Map(prev.topics.map((t) => [t.id, t]));
  for (const t of next.topics) topics.set(t.id, t);
  return {
    email: prev.email,
    firstName: next.firstName ?? prev.firstName,
    lastName: next.lastName ?? prev.lastName,
    properties: { ...prev.properties, ...next.properties },
    unsubscribed: prev.unsubscribed || next.unsubscribed ? true : (next.unsubscribed ?? prev.unsubscribed),
    topics: [...topics.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
  };
}

interface Prepared {
  /** One row per address, merged in file order. */
  rows: Map<string, ImportRow>;
  /** The lines of each address's records. */
  lines: Map<string, number[]>;
  /** Repeats of an address already counted (updated or skipped) when merged. */
  repeats: Map<string, { updated: number; skipped: number }>;
  counts: BatchCounts;
  errors: RowError[];
}

/** Reads a batch's records into rows; repeats of an address are merged and counted here. */
function prepare(batch: CsvRecord[], m: ResolvedMapping): Prepared {
  const p: Prepared = {
    rows: new Map(),
    lines: new Map(),
    repeats: new Map(),
    counts: { rows: batch.length, created: 0, updated: 0, skipped: 0, failed: 0, suppressed: 0 },
    errors: [],
  };
  for (const rec of batch) {
    const r = readContactRow(rec.cells, m);
    if (isFailure(r)) {
      p.errors.push({ line: rec.line, email: r.email, reason: r.reason });
      p.counts.failed++;
      continue;
    }
    const prev = p.rows.get(r.email);
    if (!prev) {
      p.rows.set(r.email, r);
      p.lines.set(r.email, [rec.line]);
      continue;
    }
    const next = merge(prev, r);
    const tally = p.repeats.get(r.email) ?? { updated: 0, skipped: 0 };
    if (same(prev, next)) tally.skipped++;
    else tally.updated++;
    p.repeats.set(r.email, tally);
    p.rows.set(r.email, next);
    p.lines.get(r.email)!.push(rec.line);
  }
  return p;
}

const isDataError = (err: unknown) => /^(22|23|54)/.test((err as { code?: string }).code ?? '');

/**
 * Applies the rows in one statement; if Postgres refuses a value, row by row (a savepoint each)
 * so that the refused rows are reported and the others applied.
 */
async function applyRows(tx: TxSql, imp: ImportRowRecord, p: Prepared) {
  const apply = (db: TxSql, rows: ImportRow[]) =>
    applyContactRows(db, imp.org_id, imp.key_id, imp.trigger_automations, rows);
  const all = [...p.rows.values()];
  try {
    return await tx.savepoint((sp) => apply(sp as TxSql, all));
  } catch (err) {
    if (!isDataError(err)) throw err;
  }
  const out = { created: new Set<string>(), changed: new Set<string>() };
  for (const row of all) {
    try {
      const r = await tx.savepoint((sp) => apply(sp as TxSql, [row]));
      r.created.forEach((e) => out.created.add(e));
      r.changed.forEach((e) => out.changed.add(e));
    } catch (err) {
      if (!isDataError(err)) throw err;
      const reason = `refused by the database: ${(err as Error).message}`;
      for (const line of p.lines.get(row.email)!) p.errors.push({ line, email: row.email, reason });
      p.counts.failed += p.lines.get(row.email)!.length;
      p.rows.delete(row.email);
      p.repeats.delete(row.email);
    }
  }
  return out;
}

async function applyBatch(deps: WorkerDeps, imp: ImportRowRecord, token: string, p: Prepared): Promise<void> {
  await deps.sql.begin(async (tx) => {
    const applied = await applyRows(tx, imp, p);
    for (const email of p.rows.keys()) {
      if (applied.created.has(email)) p.counts.created++;
      else if (applied.changed.has(email)) p.counts.updated++;
      else p.counts.skipped++;
    }
    for (const t of p.repeats.values()) {
      p.counts.updated += t.updated;
      p.counts.skipped += t.skipped;
    }
    const suppressed = await findSuppressedEmails(tx, imp.org_id, null, [...p.rows.keys()]);
    for (const email of suppressed) p.counts.suppressed += p.lines.get(email)?.length ?? 0;
    p.errors.sort((a, b) => a.line - b.line);
    if (!(await recordBatch(tx, imp.id, token, LEASE_SECONDS, p.counts, p.errors))) throw new LeaseLost();
  });
}

async function applyFile(deps: WorkerDeps, imp: ImportRowRecord, token: string, opts: ImportOptions) {
  const size = opts.batchRows ?? BATCH_ROWS;
  let skip = Number(imp.rows);
  let settled = skip;
  let mapping: ResolvedMapping | null = null;
  let batch: CsvRecord[] = [];
  const flush = async () => {
    await applyBatch(deps, imp, token, prepare(batch, mapping!));
    settled += batch.length;
    batch = [];
    await opts.afterBatch?.(settled);
  };
  for await (const rec of records(deps, imp)) {
    if (mapping === null) {
      const r = resolveMapping(imp.mapping, rec.cells);
      if (!r.ok) throw new ImportFailure(`mapping: ${r.reason}`);
      mapping = r.value;
      continue;
    }
    if (skip > 0) {
      skip--;
      continue;
    }
    batch.push(rec);
    if (batch.length >= size) await flush();
  }
  if (batch.length > 0) await flush();
}

/** Runs (or resumes) the import; 'busy' when another worker holds it or it is finished. */
export async function processImport(deps: WorkerDeps, id: string, opts: ImportOptions = {}): Promise<ImportOutcome> {
  const token = randomUUID();
  const imp = await claimImport(deps.sql, id, token, LEASE_SECONDS);
  if (!imp) return 'busy';
  const log = deps.logger.child({ importId: id, orgId: imp.org_id });
  try {
    if (imp.total_rows === null) await setTotalRows(deps.sql, id, token, await countRows(deps, imp), LEASE_SECONDS);
    await applyFile(deps, imp, token, opts);
    await finishImport(deps.sql, id, token, null);
    log.info({ event: 'CONTACT_IMPORT_COMPLETED' }, 'contact import completed');
    return 'completed';
  } catch (err) {
    if (err instanceof LeaseLost) {
      log.warn({ event: 'CONTACT_IMPORT_LEASE_LOST' }, 'another worker took the import over');
      return 'lost';
    }
    // Postgres out of reach: the sweeper resumes the import once it answers (the lease runs out).
    if (isUnavailable(err)) throw err;
    const reason = err instanceof ImportFailure ? err.message : `internal error: ${(err as Error).message}`;
    await finishImport(deps.sql, id, token, reason);
    if (err instanceof ImportFailure) log.warn({ event: 'CONTACT_IMPORT_FAILED', reason }, 'contact import failed');
    else log.error({ event: 'CONTACT_IMPORT_FAILED', err }, 'contact import failed');
    return 'failed';
  }
}
