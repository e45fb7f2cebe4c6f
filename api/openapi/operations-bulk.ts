// Operation docs of the bulk routes: contact imports and exports, suppression CSV in and out.
import type { OperationDocs } from './types.js';

export const bulkOperations: OperationDocs = {
  'POST /contacts/imports': {
    summary: 'Import contacts from a CSV file',
    description:
      'The CSV (header row first, up to 1,000,000 rows and 200 MiB) as the body with `Content-Type: text/csv`, or as the part `file` of `multipart/form-data` (then `mapping` and `trigger_automations` may be form fields). The file is stored, then applied by a worker: 202 with the import, whose `status` moves through queued, running, completed or failed. The same file with the same mapping and options again answers 200 with the import it already made. An empty cell keeps the stored value; an import never turns `unsubscribed` off and never changes suppressions (suppressed addresses are imported and counted in `suppressed`); it starts no automation unless `trigger_automations` is true.',
    response: 'ContactImport',
    status: [202, 200],
    statusWords: {
      202: 'Stored and queued.',
      200: 'The same file, mapping and options were imported before: that import.',
    },
    upload: 'ContactImportMapping',
  },
  'GET /contacts/imports': { summary: 'List contact imports', response: 'ContactImportList' },
  'GET /contacts/imports/:id': {
    summary: 'Get a contact import and its progress',
    description:
      '`rows` counts the data rows settled so far (of `total_rows`, known once the file has been read through); `created + updated + skipped + failed = rows`.',
    response: 'ContactImport',
  },
  'GET /contacts/imports/:id/errors': {
    summary: 'Download the rows an import could not apply',
    description: 'CSV with the columns `line` (of the file, the header being line 1), `email` and `reason`.',
    media: 'text/csv',
  },
  'POST /contacts/exports': {
    summary: 'Export contacts as CSV',
    description:
      'Queues an export of every contact, or of one segment’s: 202 with the export; download it from `download_url` once `status` is completed. Columns: id, email, first_name, last_name, unsubscribed, created_at, `properties.<name>` for each property in use, `topic.<topic id>` for each topic (the contact’s explicit choice, else empty).',
    response: 'ContactExport',
    status: [202],
    example: {},
  },
  'GET /contacts/exports': { summary: 'List contact exports', response: 'ContactExportList' },
  'GET /contacts/exports/:id': { summary: 'Get a contact export', response: 'ContactExport' },
  'GET /contacts/exports/:id/download': {
    summary: 'Download a completed export',
    media: 'text/csv',
    errors: ['invalid_state'],
  },
  'POST /suppressions/imports': {
    summary: 'Add suppressions from a CSV file',
    description:
      'A CSV (up to 1,000,000 rows and 64 MiB) with a header naming `email` (or `address`) and/or `pattern`, and optionally `domain` and `reason`; a file without such a header is read as one address or rule per line. A value with `*` is a rule. All rows are added in one transaction, except those reported in `errors` (line and reason; the first 1,000), which are left out; a file that is not valid CSV adds nothing (422).',
    response: 'SuppressionImport',
    errors: ['forbidden_domain'],
    upload: null,
  },
  'GET /suppressions/export': {
    summary: 'Download the suppression list as CSV',
    description:
      'The rows the key may see (as `GET /suppressions`), oldest first, with the columns email, pattern, domain, reason, source_email_id, created_at, id: `POST /suppressions/imports` reads the file back.',
    media: 'text/csv',
  },
};
