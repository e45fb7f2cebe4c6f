// Reads and edits the header block of a raw RFC 5322 message without re-encoding it: fields are
// located as byte ranges (a field runs from its name to the end of its last folded line), so a
// field can be removed while every other byte of the message stays exactly as it was. Lines may
// end in CRLF or, from careless clients, a bare LF; both are kept as they are.

export interface HeaderField {
  /** Field name as written (case kept). */
  name: string;
  /** Byte range of the whole field in the message, line terminators included. */
  start: number;
  end: number;
  /** Offset of the first byte after the colon. */
  valueStart: number;
}

export interface HeaderBlock {
  fields: HeaderField[];
  /** Offset of the first body byte (after the blank line); the message length when there is no body. */
  bodyStart: number;
}

export type HeaderBlockResult = { ok: true; block: HeaderBlock } | { ok: false; reason: string };

const SP = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;

/** Printable US-ASCII except the colon (RFC 5322 ftext), with trailing blanks tolerated (obs-fields). */
function validName(raw: Buffer, start: number, colon: number): boolean {
  let end = colon;
  while (end > start && (raw[end - 1] === SP || raw[end - 1] === TAB)) end--;
  if (end === start) return false;
  for (let i = start; i < end; i++) {
    const c = raw[i]!;
    if (c < 33 || c > 126) return false;
  }
  return true;
}

/** Splits the header block into fields; refuses a block a mail system could not read. */
export function readHeaderBlock(raw: Buffer): HeaderBlockResult {
  const fields: HeaderField[] = [];
  let pos = 0;
  while (pos < raw.length) {
    const nl = raw.indexOf(LF, pos);
    const lineEnd = nl === -1 ? raw.length : nl + 1;
    const contentEnd = nl === -1 ? raw.length : nl > pos && raw[nl - 1] === CR ? nl - 1 : nl;
    if (contentEnd === pos) {
      // The blank line: the body starts after it.
      return fields.length > 0
        ? { ok: true, block: { fields, bodyStart: lineEnd } }
        : { ok: false, reason: 'the message has no header fields' };
    }
    const first = raw[pos]!;
    if (first === SP || first === TAB) {
      const current = fields[fields.length - 1];
      if (!current) return { ok: false, reason: 'the message starts with a folded (indented) line' };
      current.end = lineEnd;
    } else {
      const colon = raw.indexOf(COLON, pos);
      if (colon === -1 || colon >= contentEnd || !validName(raw, pos, colon)) {
        const line = raw.subarray(pos, Math.min(contentEnd, pos + 60)).toString('latin1');
        return { ok: false, reason: `malformed header line ${JSON.stringify(line)}` };
      }
      const name = raw.subarray(pos, colon).toString('latin1').trimEnd();
      fields.push({ name, start: pos, end: lineEnd, valueStart: colon + 1 });
    }
    pos = lineEnd;
  }
  // Headers only, no body (legal: the blank line is optional when the body is empty).
  return fields.length > 0
    ? { ok: true, block: { fields, bodyStart: raw.length } }
    : { ok: false, reason: 'the message is empty' };
}

/** The unfolded value of a field (decoded as UTF-8, surrounding blanks trimmed). */
export function fieldValue(raw: Buffer, f: HeaderField): string {
  return raw
    .subarray(f.valueStart, f.end)
    .toString('utf8')
    .replace(/\r?\n(?=[ \t])/g, '')
    .replace(/\r?\n$/, '')
    .trim();
}

/** The message without the given fields; every other byte is kept as it was. */
export function removeFields(raw: Buffer, drop: HeaderField[]): Buffer {
  if (drop.length === 0) return raw;
  const sorted = [...drop].sort((a, b) => a.start - b.start);
  const parts: Buffer[] = [];
  let pos = 0;
  for (const f of sorted) {
    parts.push(raw.subarray(pos, f.start));
    pos = f.end;
  }
  parts.push(raw.subarray(pos));
  return Buffer.concat(parts);
}

/** Shorthand: fields whose name matches, case-insensitively. */
export function fieldsNamed(block: HeaderBlock, test: (lowerName: string) => boolean): HeaderField[] {
  return block.fields.filter((f) => test(f.name.toLowerCase()));
}
