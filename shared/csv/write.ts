// Every CSV Tern writes (the metrics CSV, contact exports, an import's rejected rows, suppression
// exports) comes from here: RFC 4180 (CRLF line ends; a field with a comma, quote, CR or LF
// quoted, quotes doubled), booleans as `true` / `false`, dates in ISO 8601, empty for null.
// A text cell that a spreadsheet would run as a formula (first character `=`, `+`, `-`, `@`, tab
// or CR: OWASP's "CSV injection") is written with a `'` in front, and quoted. So that the guard can
// be undone exactly, a cell that already starts with `'`s before such a character gets one more;
// readCsv (./read.ts) takes one away, so that an export imports back as it was.
import { stringify, type Options, type Stringifier } from 'csv-stringify';
import { stringify as stringifySync } from 'csv-stringify/sync';

export type CsvCell = string | number | boolean | Date | null | undefined;

const FORMULA = /^'*[=+\-@\t\r]/;
const GUARDED = /^'+[=+\-@\t\r]/;

/** A text cell as written: with the formula guard when it needs one. */
export function guardCell(value: string): string {
  return FORMULA.test(value) ? `'${value}` : value;
}

/** A text cell as read: the guard of guardCell taken away (cells without one are left alone). */
export function unguardCell(value: string): string {
  return GUARDED.test(value) ? value.slice(1) : value;
}

const OPTIONS: Options = {
  record_delimiter: 'windows',
  // csv-stringify quotes a field holding the whole delimiter (CRLF) only; a lone CR or LF too.
  quoted_match: /[\r\n]/,
  cast: {
    string: (v) => (FORMULA.test(v) ? { value: guardCell(v), quoted: true } : v),
    boolean: (v) => (v ? 'true' : 'false'),
    date: (v) => v.toISOString(),
  },
};

/** Rows (a header is a row like the others) as CSV text, each ending with CRLF. */
export function csvText(rows: readonly (readonly CsvCell[])[]): string {
  return stringifySync(rows as CsvCell[][], OPTIONS);
}

/** A stream that writes the header, then each record written to it (an array of cells), as CSV. */
export function csvStringifier(header: readonly string[]): Stringifier {
  return stringify({ ...OPTIONS, header: true, columns: [...header] });
}
