// The shape of a MIME message, read before it is parsed: how many parts it has and how deeply its
// multiparts nest. One pass over the lines, no decoding: a message with thousands of parts is
// refused here in milliseconds instead of being handed to mailparser, whose child-node limit
// (1000) leaves its promise unsettled (shared/mail/bounded-parse.ts).

export interface ShapeLimits {
  /** Most MIME parts (each body part of every multipart counts). */
  maxParts: number;
  /** Deepest nesting of multiparts and embedded messages (a single-part message is 0, a multipart/mixed 1). */
  maxDepth: number;
}

export type Shape =
  { ok: true; parts: number; depth: number } | { ok: false; limit: 'parts' | 'depth'; reason: string };

interface Open {
  delimiter: string;
  depth: number;
}

const LF = 0x0a;
const DASH = 0x2d;
/** A line is read up to this many bytes (a boundary is at most 70, a header line that matters short). */
const MAX_LINE = 1000;

const BOUNDARY = /boundary\s*=\s*(?:"([^"]{1,200})"|([^\s;"]{1,200}))/i;

/**
 * What a header block opens: a multipart (its boundary), an embedded message (message/rfc822 not
 * base64 or quoted-printable encoded: its own header block follows), or nothing.
 */
function opens(header: string[]): { boundary: string } | 'message' | null {
  const unfolded = header.join('\n').replace(/\n[ \t]+/g, ' ');
  const ct = /^content-type\s*:(.*)$/im.exec(unfolded)?.[1] ?? '';
  if (/^\s*message\/(rfc822|global)\b/i.test(ct)) {
    return /^content-transfer-encoding\s*:\s*(base64|quoted-printable)/im.test(unfolded) ? null : 'message';
  }
  if (!/^\s*multipart\//i.test(ct)) return null;
  const m = BOUNDARY.exec(ct);
  return m ? { boundary: (m[1] ?? m[2]!).trim() } : null;
}

/**
 * Counts parts and nesting; stops at the first limit passed. With `maxLines`, gives up (null)
 * after reading that many lines: a caller on a busy event loop bounds its own cost that way.
 */
export function mimeShape(raw: Buffer, limits: ShapeLimits, maxLines = Infinity): Shape | null {
  let lines = 0;
  const open: Open[] = [];
  let header: string[] | null = [];
  let depth = 0;
  let parts = 0;
  let deepest = 0;
  let start = 0;
  while (start < raw.length) {
    if (!header) {
      // In a body only a line starting with "--" can be a delimiter: skip to the next such line
      // (outside every multipart nothing more can be counted).
      if (open.length === 0) break;
      if (raw[start] !== DASH || raw[start + 1] !== DASH) {
        const next = raw.indexOf('\n--', start, 'latin1');
        if (next === -1) break;
        start = next + 1;
      }
    }
    if (++lines > maxLines) return null;
    let end = raw.indexOf(LF, start);
    if (end === -1) end = raw.length;
    const line = raw.toString('latin1', start, Math.min(end, start + MAX_LINE)).replace(/\r$/, '');
    start = end + 1;
    if (header) {
      if (line !== '') {
        if (header.length < 200) header.push(line);
        continue;
      }
      const opened = opens(header);
      header = null;
      if (!opened) continue;
      deepest = Math.max(deepest, depth + 1);
      if (deepest > limits.maxDepth) {
        return { ok: false, limit: 'depth', reason: `MIME parts nest deeper than ${limits.maxDepth}` };
      }
      if (opened === 'message') {
        depth++;
        header = [];
      } else {
        open.push({ delimiter: `--${opened.boundary}`, depth: depth + 1 });
      }
      continue;
    }
    const at = open.findLastIndex((o) => line.startsWith(o.delimiter));
    if (at === -1) continue;
    const o = open[at]!;
    const rest = line.slice(o.delimiter.length).trimEnd();
    if (rest === '--') {
      // The close delimiter: this multipart and any left open inside it end.
      open.length = at;
      depth = o.depth - 1;
    } else if (rest === '') {
      open.length = at + 1;
      depth = o.depth;
      header = [];
      if (++parts > limits.maxParts) {
        return { ok: false, limit: 'parts', reason: `more than ${limits.maxParts} MIME parts` };
      }
    }
  }
  return { ok: true, parts, depth: deepest };
}
