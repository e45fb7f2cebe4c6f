// Suppressions in bulk (DESIGN §16). POST /suppressions/imports reads a CSV of addresses and
// rules as it arrives (api/uploads.ts) and adds them in batches of one statement each, all in one
// transaction: the file applies whole or not at all, except the rows reported as failed (each
// with its line and why), which are left out. GET /suppressions/export streams the rows the key
// may see as CSV, in the columns the import reads back (shared/suppression-csv.ts).
import { isRestricted } from '../../shared/auth.js';
import { CsvError, csvProblem, readCsv } from '../../shared/csv/read.js';
import { validationError } from '../../shared/errors.js';
import { SUPPRESSION_IMPORT_MAX_BYTES } from '../../shared/permissions.js';
import {
  importSuppressions,
  SUPPRESSION_CSV_COLUMNS,
  suppressionRecords,
  type ImportSummary,
} from '../../shared/suppression-csv.js';
import { routeQuery } from '../route-schemas.js';
import type { SuppressionExportQuery, SuppressionImportQuery } from '../schemas/suppressions.js';
import type { Handlers } from '../types.js';
import { openUpload } from '../uploads.js';
import { csvDownload } from '../csv-download.js';
import { resolveDomain, scopeOf } from './suppressions.js';

export const suppressionBulkHandlers: Handlers = {
  'POST /suppressions/imports': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<SuppressionImportQuery>(ctx);
    const domain = q.domain === undefined ? null : resolveDomain(auth, q.domain, 'query.domain');
    const upload = await openUpload(ctx, SUPPRESSION_IMPORT_MAX_BYTES);
    const scope = {
      domains: auth.domains,
      restrictedTo: isRestricted(auth) ? auth.key.domainIds : null,
      domainId: domain?.id ?? null,
      reason: q.reason ?? 'manual',
    };
    let summary: ImportSummary;
    try {
      summary = await ctx.deps.sql.begin((tx) => importSuppressions(tx, auth.org.id, readCsv(upload.file), scope));
    } catch (err) {
      if (err instanceof CsvError) {
        throw validationError(
          `The file is not valid CSV near line ${String(err.lines)}: ${csvProblem(err)}; nothing was imported`,
        );
      }
      throw err;
    }
    ctx.state.log.info({ event: 'SUPPRESSION_IMPORT', orgId: auth.org.id, ...summary, errors: undefined }, 'imported');
    ctx.body = {
      object: 'suppression_import',
      ...summary,
      errors_truncated: summary.failed > summary.errors.length,
    };
  },

  'GET /suppressions/export': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<SuppressionExportQuery>(ctx);
    const domainId = q.domain === undefined ? undefined : resolveDomain(auth, q.domain, 'query.domain').id;
    const filter = { reason: q.reason, domainId, type: q.type };
    const records = suppressionRecords(ctx.deps.sql, auth.org.id, scopeOf(auth, false), filter, auth.domains);
    csvDownload(ctx, 'suppressions.csv', SUPPRESSION_CSV_COLUMNS, records, { event: 'SUPPRESSION_EXPORT_FAILED' });
  },
};
