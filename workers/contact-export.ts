// A contact export, run by one job of the `contact-bulk` queue: claim (a lease; an export taken
// over by another worker starts again from its first byte) → the columns (the fixed fields, one
// per property name in use, one per topic) → pages of contacts in id order, written as CSV into
// file_chunks → completed. Columns: id, email, first_name, last_name, unsubscribed, created_at,
// `properties.<name>`…, `topic.<topic id>`… (the contact's explicit choice, else empty): an
// import reads them back with a mapping naming those columns.
import { randomUUID } from 'node:crypto';
import {
  claimExport,
  exportPage,
  exportPropertyNames,
  exportTopicIds,
  finishExport,
  renewExport,
  type ExportContact,
  type ExportRow,
} from '../shared/db/contact-exports.js';
import { insertChunk, writeChunked } from '../shared/db/file-chunks.js';
import { csvText, type CsvCell } from '../shared/csv/write.js';
import { isUnavailable } from '../shared/errors.js';
import type { WorkerDeps } from './deps.js';

const LEASE_SECONDS = 60;
const PAGE_ROWS = 5000;
/** Property columns at most (the names in use, sorted). */
const MAX_PROPERTY_COLUMNS = 500;

class LeaseLost extends Error {}

export type ExportOutcome = 'completed' | 'failed' | 'busy' | 'lost';

function cellsOf(c: ExportContact, props: string[], topics: string[]): CsvCell[] {
  return [
    c.id,
    c.email,
    c.first_name,
    c.last_name,
    c.unsubscribed,
    c.created_at,
    ...props.map((p) => c.properties[p]),
    ...topics.map((t) => c.topics?.[t]),
  ];
}

/** The export's CSV, page by page, renewing the lease as it goes; `count.rows` ends as the total. */
async function* csvOf(deps: WorkerDeps, e: ExportRow, token: string, count: { rows: number }) {
  const props = await exportPropertyNames(deps.sql, e.org_id, e, MAX_PROPERTY_COLUMNS);
  const topics = await exportTopicIds(deps.sql, e.org_id);
  const header = ['id', 'email', 'first_name', 'last_name', 'unsubscribed', 'created_at'];
  yield Buffer.from(csvText([[...header, ...props.map((p) => `properties.${p}`), ...topics.map((t) => `topic.${t}`)]]));
  let after: string | null = null;
  for (;;) {
    const page: ExportContact[] = await exportPage(deps.sql, e.org_id, e, after, PAGE_ROWS);
    if (page.length === 0) return;
    yield Buffer.from(csvText(page.map((c) => cellsOf(c, props, topics))));
    count.rows += page.length;
    after = page.at(-1)!.id;
    if (!(await renewExport(deps.sql, e.id, token, LEASE_SECONDS, count.rows))) throw new LeaseLost();
  }
}

export async function processExport(deps: WorkerDeps, id: string): Promise<ExportOutcome> {
  const token = randomUUID();
  const e = await claimExport(deps.sql, id, token, LEASE_SECONDS);
  if (!e) return 'busy';
  const count = { rows: 0 };
  try {
    const file = await writeChunked(csvOf(deps, e, token, count), (seq, data) =>
      insertChunk(deps.sql, e.org_id, id, seq, data),
    );
    await finishExport(deps.sql, id, token, { rows: count.rows, ...file });
    deps.logger.info({ event: 'CONTACT_EXPORT_COMPLETED', exportId: id, rows: count.rows }, 'contact export completed');
    return 'completed';
  } catch (err) {
    if (err instanceof LeaseLost) return 'lost';
    // Postgres out of reach: the sweeper runs the export again once it answers. Anything else
    // would fail again the same way.
    if (isUnavailable(err)) throw err;
    await finishExport(deps.sql, id, token, { error: `internal error: ${(err as Error).message}` });
    deps.logger.error({ event: 'CONTACT_EXPORT_FAILED', exportId: id, err }, 'contact export failed');
    return 'failed';
  }
}
