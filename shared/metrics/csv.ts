// RFC 4180 CSV: CRLF line ends, fields with a comma, quote, CR or LF quoted, quotes doubled.
// Fields that a spreadsheet would run as a formula (=, +, -, @ first) are prefixed with a quote
// so that a label such as "=HYPERLINK(…)" stays text (CSV injection).

function field(value: string | number): string {
  if (typeof value === 'number') return String(value);
  let s = value;
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(header: string[], rows: (string | number)[][]): string {
  return [header, ...rows].map((r) => r.map(field).join(',')).join('\r\n') + '\r\n';
}
