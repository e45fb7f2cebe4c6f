// Reads CSV as it arrives (csv-parse, streaming): quoted fields, a byte-order mark, CRLF, LF or CR,
// blank lines skipped, each record with the line it starts on (for error reports). A record
// longer than RECORD_MAX_BYTES, or unbalanced quotes, ends the read with CsvError (the caller
// reports it with its line); memory stays bounded by one record and one chunk. A cell keeps its
// text, but for the formula guard that Tern's own exports write (./write.ts), taken away.
import { parse, CsvError } from 'csv-parse';
import { Readable } from 'node:stream';
import { unguardCell } from './write.js';

export { CsvError };

/** Longest record accepted (a line with its quoted line breaks). */
export const RECORD_MAX_BYTES = 64 * 1024;

export interface CsvRecord {
  /** 1-based line of the file where the record starts. */
  line: number;
  cells: string[];
}

/** The records of `source`, in order; with `first`, only that many (the rest is not looked at). */
export async function* readCsv(
  source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  first?: number,
): AsyncGenerator<CsvRecord> {
  const parser = parse({
    bom: true,
    skip_empty_lines: true,
    // Files joined from several sources mix line endings.
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    max_record_size: RECORD_MAX_BYTES,
    info: true,
    ...(first !== undefined ? { to: first } : {}),
  });
  const input = Readable.from(source, { objectMode: false });
  input.on('error', (err) => parser.destroy(err));
  input.pipe(parser);
  const startLine = lineCounter();
  for await (const item of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    yield { line: startLine(item), cells: item.record.map(unguardCell) };
  }
}

/**
 * Start lines from csv-parse's `info.lines`, the line a record ends on, where a CR LF inside a
 * quoted field counts as two lines (and so every later record's count is one higher per such
 * pair): this undoes both.
 */
function lineCounter(): (item: { record: string[]; info: { lines: number } }) => number {
  let excess = 0;
  return (item) => {
    let breaks = 0;
    let pairs = 0;
    for (const cell of item.record) {
      for (let i = 0; i < cell.length; i++) {
        const c = cell.charCodeAt(i);
        if (c === 10 || c === 13) breaks++;
        if (c === 13 && cell.charCodeAt(i + 1) === 10) pairs++;
      }
    }
    const start = item.info.lines - excess - breaks;
    excess += pairs;
    return start;
  };
}

/** The words of a CsvError for a person: what is wrong, without csv-parse's option names. */
export function csvProblem(err: CsvError): string {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field is never closed';
    case 'CSV_MAX_RECORD_SIZE':
      return `a record is longer than ${RECORD_MAX_BYTES} bytes`;
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'a quote is followed by other characters inside a field (write "" for a quote within a quoted field)';
    default:
      return err.message.replace(/^Invalid Record Length: /, '');
  }
}
