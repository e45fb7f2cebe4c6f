// Contact imports (DESIGN §16; docs/api/contacts.md "Imports"). POST /contacts/imports streams the
// CSV into Postgres (file_chunks, about 1 MiB a row) while hashing it, reads the header row from
// the first bytes, checks the mapping against it, and queues the import (202); the worker
// (workers/contact-import.ts) applies it. The same file with the same mapping and options again
// is the same import: the answer is that import (200), and nothing is queued twice.
import { createHash } from 'node:crypto';
import { enqueueContactBulk } from '../../shared/contact-bulk-jobs.js';
import {
  canonicalMapping,
  defaultMapping,
  resolveMapping,
  type ImportMapping,
} from '../../shared/contact-import-mapping.js';
import { CsvError, csvProblem, readCsv, RECORD_MAX_BYTES } from '../../shared/csv/read.js';
import {
  deleteImport,
  getImport,
  importErrorBatches,
  insertReceivingImport,
  listImports,
  queueReceivedImport,
  type ImportRowRecord,
} from '../../shared/db/contact-imports.js';
import { insertChunk, writeChunked } from '../../shared/db/file-chunks.js';
import type { Sql } from '../../shared/db/pool.js';
import { findTopics } from '../../shared/db/topics.js';
import { notFound, validationError } from '../../shared/errors.js';
import { CONTACT_IMPORT_MAX_BYTES } from '../../shared/permissions.js';
import { routeQuery } from '../route-schemas.js';
import {
  contactImportMappingSchema,
  type ContactImportQuery,
  type ListContactImportsQuery,
} from '../schemas/contact-imports.js';
import type { ApiContext, Handlers } from '../types.js';
import { isUploadType, openUpload, refuseUploadType } from '../uploads.js';
import { listEnvelope, valueValidator } from '../validate.js';
import { csvDownload } from '../csv-download.js';

const checkMapping = valueValidator<ImportMapping>(contactImportMappingSchema, 'mapping');

export function renderImport(baseUrl: string, r: ImportRowRecord) {
  return {
    object: 'contact_import',
    id: r.id,
    status: r.status,
    rows: Number(r.rows),
    total_rows: r.total_rows === null ? null : Number(r.total_rows),
    created: Number(r.created),
    updated: Number(r.updated),
    skipped: Number(r.skipped),
    failed: Number(r.failed),
    suppressed: Number(r.suppressed),
    errors_url: `${baseUrl}/api/v1/contacts/imports/${r.id}/errors`,
    error: r.error,
    trigger_automations: r.trigger_automations,
    mapping: r.mapping,
    file: { bytes: Number(r.file_bytes), sha256: r.content_hash },
    created_at: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}

function parseMapping(text: string): ImportMapping {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw validationError(`mapping is not valid JSON: ${(err as Error).message}`);
  }
  return checkMapping(value);
}

/** The header row: the first record of the file's first bytes. */
async function headerOf(head: Buffer): Promise<string[]> {
  try {
    for await (const rec of readCsv([head], 1)) return rec.cells;
  } catch (err) {
    if (err instanceof CsvError) throw validationError(`The header row is not valid CSV: ${csvProblem(err)}`);
    throw err;
  }
  throw validationError('The file has no header row');
}

async function checkTopics(sql: Sql, orgId: string, mapping: ImportMapping): Promise<void> {
  const ids = Object.keys(mapping.topics ?? {});
  if (ids.length === 0) return;
  const found = new Set((await findTopics(sql, orgId, ids)).map((t) => t.id));
  const unknown = ids.filter((id) => !found.has(id));
  if (unknown.length > 0)
    throw validationError(`mapping.topics: ${unknown.join(', ')} is not a topic of this organization`);
}

interface Stored {
  hash: string;
  head: Buffer;
  chunks: number;
  bytes: number;
  fields: Record<string, string>;
}

/** Streams the upload into file_chunks under `id`, hashing it and keeping its first bytes. */
async function store(ctx: ApiContext, orgId: string, id: string): Promise<Stored> {
  const upload = await openUpload(ctx, CONTACT_IMPORT_MAX_BYTES);
  const hash = createHash('sha256');
  const head: Buffer[] = [];
  let headBytes = 0;
  const { chunks, bytes } = await writeChunked(
    upload.file,
    (seq, data) => insertChunk(ctx.deps.sql, orgId, id, seq, data),
    (piece) => {
      hash.update(piece);
      if (headBytes < RECORD_MAX_BYTES) {
        head.push(piece.subarray(0, RECORD_MAX_BYTES - headBytes));
        headBytes += Math.min(piece.length, RECORD_MAX_BYTES - headBytes);
      }
    },
  );
  if (bytes === 0) throw validationError('The file is empty');
  return { hash: hash.digest('hex'), head: Buffer.concat(head), chunks, bytes, fields: upload.fields() };
}

const create: Handlers[string] = async (ctx) => {
  const auth = ctx.state.auth;
  const { sql, queues, config } = ctx.deps;
  const q = routeQuery<ContactImportQuery>(ctx);
  if (!isUploadType(ctx)) refuseUploadType(ctx);
  // A mapping in the query is checked before a byte of the file is read.
  const given = q.mapping === undefined ? undefined : parseMapping(q.mapping);
  const id = await insertReceivingImport(sql, auth.org.id, auth.key.id);
  try {
    const file = await store(ctx, auth.org.id, id);
    const header = await headerOf(file.head);
    const text = file.fields.mapping;
    const mapping = given ?? (text !== undefined ? parseMapping(text) : defaultMapping(header));
    const resolved = resolveMapping(mapping, header);
    if (!resolved.ok) throw validationError(`mapping: ${resolved.reason}`);
    await checkTopics(sql, auth.org.id, mapping);
    const trigger = q.trigger_automations === true || /^(true|1)$/i.test(file.fields.trigger_automations ?? '');
    const dedupeKey = createHash('sha256')
      .update(`${file.hash}\n${canonicalMapping(mapping)}\n${trigger}`)
      .digest('hex');
    const queued = await queueReceivedImport(sql, id, {
      contentHash: file.hash,
      dedupeKey,
      mapping,
      triggerAutomations: trigger,
      bytes: file.bytes,
      chunks: file.chunks,
    });
    if (!queued.queued) {
      await deleteImport(sql, id);
      ctx.status = 200;
      ctx.body = renderImport(config.baseUrl, queued.existing);
      return;
    }
  } catch (err) {
    await deleteImport(sql, id).catch(() => undefined);
    throw err;
  }
  // The answer shows the import as queued: read before the job exists, which a worker could
  // otherwise have started (or, for a small file, finished) by the time it is read.
  const row = (await getImport(sql, auth.org.id, id))!;
  try {
    await enqueueContactBulk(queues, 'import', id);
  } catch (err) {
    // Stored and queued in Postgres: the worker's sweeper starts it once Redis answers again.
    ctx.state.log.warn({ event: 'CONTACT_IMPORT_ENQUEUE_FAILED', importId: id, err }, 'import left to the sweeper');
  }
  ctx.status = 202;
  ctx.body = renderImport(config.baseUrl, row);
};

async function importOr404(ctx: ApiContext & { state: { auth: { org: { id: string } } } }) {
  const row = await getImport(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
  if (!row) throw notFound('Import');
  return row;
}

export const contactImportHandlers: Handlers = {
  'POST /contacts/imports': create,

  'GET /contacts/imports': async (ctx) => {
    const q = routeQuery<ListContactImportsQuery>(ctx);
    const rows = await listImports(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, (r) => renderImport(ctx.deps.config.baseUrl, r));
  },

  'GET /contacts/imports/:id': async (ctx) => {
    ctx.body = renderImport(ctx.deps.config.baseUrl, await importOr404(ctx));
  },

  // The rows not applied so far (complete once the import is), as CSV: line, email, reason.
  'GET /contacts/imports/:id/errors': async (ctx) => {
    const row = await importOr404(ctx);
    const batches = importErrorBatches(ctx.deps.sql, row.id);
    async function* records() {
      for await (const rows of batches) for (const e of rows) yield [e.line, e.email ?? '', e.reason];
    }
    csvDownload(ctx, `${row.id}-errors.csv`, ['line', 'email', 'reason'], records(), {
      event: 'CONTACT_IMPORT_ERRORS_FAILED',
    });
  },
};
