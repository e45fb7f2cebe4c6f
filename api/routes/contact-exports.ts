// Contact exports (DESIGN §16; docs/api/contacts.md "Exports"): POST /contacts/exports queues a
// job (202) that writes every contact (or a segment's) as CSV into Postgres; GET …/{id} shows its
// progress, and …/download streams the file once it is complete.
import { Readable } from 'node:stream';
import { enqueueContactBulk } from '../../shared/contact-bulk-jobs.js';
import { getExport, insertExport, listExports, type ExportRow } from '../../shared/db/contact-exports.js';
import { readChunks } from '../../shared/db/file-chunks.js';
import { findSegment } from '../../shared/db/segments.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { routeBody, routeQuery } from '../route-schemas.js';
import type { CreateContactExportBody, ListContactImportsQuery } from '../schemas/contact-imports.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';

export function renderExport(baseUrl: string, r: ExportRow) {
  return {
    object: 'contact_export',
    id: r.id,
    status: r.status,
    rows: Number(r.rows),
    segment_id: r.segment_id,
    download_url: r.status === 'completed' ? `${baseUrl}/api/v1/contacts/exports/${r.id}/download` : null,
    error: r.error,
    file: { bytes: Number(r.file_bytes) },
    created_at: r.created_at.toISOString(),
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}

async function exportOr404(ctx: ApiContext & { state: { auth: { org: { id: string } } } }): Promise<ExportRow> {
  const row = await getExport(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
  if (!row) throw notFound('Export');
  return row;
}

export const contactExportHandlers: Handlers = {
  'POST /contacts/exports': async (ctx) => {
    const auth = ctx.state.auth;
    const { sql, queues, config } = ctx.deps;
    const body = routeBody<CreateContactExportBody>(ctx);
    let filter = null;
    if (body.segment_id !== undefined) {
      const segment = await findSegment(sql, auth.org.id, body.segment_id);
      if (!segment) throw validationError(`body.segment_id: ${body.segment_id} is not a segment of this organization`);
      filter = segment.filter;
    }
    const row = await insertExport(sql, {
      orgId: auth.org.id,
      keyId: auth.key.id,
      segmentId: body.segment_id ?? null,
      filter,
    });
    try {
      await enqueueContactBulk(queues, 'export', row.id);
    } catch (err) {
      ctx.state.log.warn(
        { event: 'CONTACT_EXPORT_ENQUEUE_FAILED', exportId: row.id, err },
        'export left to the sweeper',
      );
    }
    ctx.status = 202;
    ctx.body = renderExport(config.baseUrl, row);
  },

  'GET /contacts/exports': async (ctx) => {
    const q = routeQuery<ListContactImportsQuery>(ctx);
    const rows = await listExports(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, (r) => renderExport(ctx.deps.config.baseUrl, r));
  },

  'GET /contacts/exports/:id': async (ctx) => {
    ctx.body = renderExport(ctx.deps.config.baseUrl, await exportOr404(ctx));
  },

  'GET /contacts/exports/:id/download': async (ctx) => {
    const row = await exportOr404(ctx);
    if (row.status !== 'completed') {
      throw new ApiError(
        'invalid_state',
        `Export ${row.id} is ${row.status}; download it once its status is completed`,
      );
    }
    ctx.set('Content-Disposition', `attachment; filename="contacts-${row.id}.csv"`);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.length = Number(row.file_bytes);
    ctx.body = Readable.from(readChunks(ctx.deps.sql, row.id, row.file_chunks));
  },
};
