// A CSV answer streamed as it is produced (shared/csv/write.ts): a header row, then `records`. A
// failure half-way (the database gone) ends the download early, as a broken connection would,
// and is logged with the caller's `event` code.
import { pipeline, Readable } from 'node:stream';
import { csvStringifier, type CsvCell } from '../shared/csv/write.js';
import type { ApiContext } from './types.js';

export function csvDownload(
  ctx: ApiContext,
  filename: string,
  columns: string[],
  records: AsyncIterable<CsvCell[]>,
  onFailure: { event: string },
): void {
  const csv = csvStringifier(columns);
  pipeline(Readable.from(records), csv, (err) => {
    if (err) ctx.state.log.warn({ event: onFailure.event, err }, 'CSV download stopped');
  });
  ctx.set('Content-Disposition', `attachment; filename="${filename}"`);
  ctx.type = 'text/csv; charset=utf-8';
  ctx.body = csv;
}
