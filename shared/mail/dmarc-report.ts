// DMARC aggregate reports (RFC 7489 §7.2, appendix C): the attachment of a report mail, as
// reporters send it (a .zip from Google, a .xml.gz from Microsoft and Yahoo, plain XML from a
// few), unpacked with bounds and read into a report. Anything else is refused with a reason:
// - unpacking stops at MAX_XML_BYTES, and at MAX_RATIO times the packed size (a zip or gzip bomb
//   costs at most that much memory, never the whole expansion);
// - a document with a DOCTYPE is refused before parsing (no entity can expand);
// - at most MAX_RECORDS records; a record whose fields are not what the schema allows refuses
//   the report (a half-read report would skew the summary).
import { isIP } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { Unzip, UnzipInflate } from 'fflate';

export const MAX_XML_BYTES = 16 * 1024 * 1024;
export const MAX_RATIO = 200;
/** Below this size the ratio is not checked (small XML compresses far better than 200:1 may allow). */
const RATIO_FLOOR = 1024 * 1024;
export const MAX_RECORDS = 50_000;

export interface ReportPart {
  filename: string | null;
  contentType: string;
  content: Buffer;
}

export interface DmarcRecord {
  sourceIp: string;
  count: number;
  disposition: 'none' | 'quarantine' | 'reject';
  dkimAligned: boolean;
  spfAligned: boolean;
  headerFrom: string | null;
  envelopeFrom: string | null;
  auth: { dkim: Record<string, string>[]; spf: Record<string, string>[] };
}

export interface DmarcReport {
  reporter: { name: string; email: string | null };
  reportId: string;
  begin: Date;
  end: Date;
  policy: Record<string, string>;
  records: DmarcRecord[];
}

export type ReadResult = { ok: true; report: DmarcReport } | { ok: false; reason: string };

class Refused extends Error {}

const GZIP = /(^|\/)(x-)?gzip$|\.gz$/i;
const ZIP = /(^|\/)(x-)?zip(-compressed)?$|\.zip$/i;
const XML = /(^|\/)xml$|\.xml$/i;

/** The report part of a mail: the first zip, gzip or XML attachment (by type or file name). */
export function reportPart(parts: ReportPart[]): ReportPart | null {
  const looks = (p: ReportPart) =>
    [p.contentType, p.filename ?? ''].some((s) => GZIP.test(s) || ZIP.test(s) || XML.test(s));
  return parts.find(looks) ?? null;
}

function limitFor(packed: number): number {
  return Math.min(MAX_XML_BYTES, Math.max(RATIO_FLOOR, packed * MAX_RATIO));
}

/**
 * The first .xml entry of a zip, inflated in slices of the input so that it stops as soon as the
 * output passes `limit` (a declared size is not trusted: an entry may lie about it).
 */
function unzipFirstXml(data: Buffer, limit: number): Buffer {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let found = false;
  let done = false;
  let refusal: string | null = null;
  const unzip = new Unzip((file) => {
    if (found || !/\.xml$/i.test(file.name)) return;
    found = true;
    file.ondata = (err, chunk, final) => {
      if (err) refusal = 'the zip data is corrupt';
      else if ((total += chunk.length) > limit)
        refusal = `the zip entry ${file.name} unpacks to more than ${limit} bytes`;
      else chunks.push(chunk);
      if (refusal) file.terminate();
      done ||= final;
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    for (let i = 0; i < data.length && !refusal && !done; i += 64 * 1024) {
      unzip.push(data.subarray(i, i + 64 * 1024), i + 64 * 1024 >= data.length);
    }
  } catch {
    refusal ??= 'the zip data is corrupt';
  }
  if (refusal) throw new Refused(refusal);
  if (!found || !done) throw new Refused(found ? 'the zip entry is truncated' : 'the zip holds no .xml file');
  return Buffer.concat(chunks);
}

function unpack(part: ReportPart): Buffer {
  const data = part.content;
  const limit = limitFor(data.length);
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      return gunzipSync(data, { maxOutputLength: limit });
    } catch (err) {
      const big = (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
      throw new Refused(big ? `the gzip unpacks to more than ${limit} bytes` : 'the gzip data is corrupt');
    }
  }
  if (data.subarray(0, 4).equals(Buffer.from('PK\x03\x04', 'latin1'))) return unzipFirstXml(data, limit);
  if (data.length > MAX_XML_BYTES) throw new Refused(`the XML is larger than ${MAX_XML_BYTES} bytes`);
  return data;
}

const REPEATED = new Set(['record', 'dkim', 'spf', 'error', 'reason']);

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: 32,
  // auth_results has dkim and spf lists; policy_evaluated has single dkim and spf words.
  isArray: (name, jpath) => REPEATED.has(name) && !String(jpath).includes('policy_evaluated'),
});

type Node = Record<string, unknown>;

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/**
 * The text of a value with XML's references decoded in one pass (so `&amp;lt;` stays `&lt;`): the
 * five predefined entities and character references. The parser leaves them alone, as it would
 * otherwise also expand a DOCTYPE's entities (refused before parsing anyway).
 */
function decodeXmlText(s: string): string {
  return s.replace(
    /&(?:#x([0-9a-f]{1,6})|#(\d{1,7})|(amp|lt|gt|quot|apos));/gi,
    (whole, hex?: string, dec?: string, name?: string) => {
      if (name) return XML_ENTITIES[name] ?? whole;
      const code = hex ? parseInt(hex, 16) : Number(dec);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : whole;
    },
  );
}

function text(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() === '' ? null : decodeXmlText(v.trim());
  if (typeof v === 'number') return String(v);
  return null;
}

function need(v: unknown, what: string, max = 256): string {
  const s = text(v);
  if (!s || s.length > max) throw new Refused(`${what} is missing or too long`);
  return s;
}

function node(v: unknown, what: string): Node {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Refused(`${what} is missing`);
  return v as Node;
}

function epoch(v: unknown, what: string): Date {
  const s = need(v, what, 20);
  if (!/^\d{1,12}$/.test(s)) throw new Refused(`${what} is not a time in seconds`);
  return new Date(Number(s) * 1000);
}

function words(list: unknown, keys: string[]): Record<string, string>[] {
  const items = Array.isArray(list) ? list : [];
  return items.slice(0, 20).map((item) => {
    const out: Record<string, string> = {};
    for (const k of keys) {
      const v = text((item as Node | null)?.[k]);
      if (v) out[k] = v.slice(0, 256);
    }
    return out;
  });
}

function record(raw: unknown, i: number): DmarcRecord {
  const r = node(raw, `record ${i + 1}`);
  const row = node(r.row, `record ${i + 1} row`);
  const evaluated = node(row.policy_evaluated, `record ${i + 1} policy_evaluated`);
  const ip = need(row.source_ip, `record ${i + 1} source_ip`, 64);
  if (!isIP(ip)) throw new Refused(`record ${i + 1}: source_ip ${ip} is not an IP address`);
  const count = need(row.count, `record ${i + 1} count`, 12);
  // Below 10^9: a day's count of one source; more is not a report a receiver writes.
  if (!/^\d{1,9}$/.test(count)) throw new Refused(`record ${i + 1}: count is not a number below 10^9`);
  const disposition = need(evaluated.disposition, `record ${i + 1} disposition`).toLowerCase();
  if (disposition !== 'none' && disposition !== 'quarantine' && disposition !== 'reject') {
    throw new Refused(`record ${i + 1}: disposition "${disposition}" is not none, quarantine or reject`);
  }
  const ids = (r.identifiers ?? {}) as Node;
  const auth = (r.auth_results ?? {}) as Node;
  return {
    sourceIp: ip.toLowerCase(),
    count: Number(count),
    disposition,
    dkimAligned: text(evaluated.dkim)?.toLowerCase() === 'pass',
    spfAligned: text(evaluated.spf)?.toLowerCase() === 'pass',
    headerFrom: text(ids.header_from)?.slice(0, 256) ?? null,
    envelopeFrom: text(ids.envelope_from)?.slice(0, 256) ?? null,
    auth: {
      dkim: words(auth.dkim, ['domain', 'selector', 'result']),
      spf: words(auth.spf, ['domain', 'scope', 'result']),
    },
  };
}

function readXml(xml: Buffer): DmarcReport {
  const doc = xml.toString('utf8').replace(/^\uFEFF/, '');
  if (/<!DOCTYPE|<!ENTITY/i.test(doc)) throw new Refused('the XML declares a DOCTYPE or entities');
  const valid = XMLValidator.validate(doc);
  if (valid !== true) throw new Refused(`malformed XML (line ${valid.err.line}: ${valid.err.msg})`);
  const feedback = node((parser.parse(doc) as Node).feedback, '<feedback>');
  const meta = node(feedback.report_metadata, '<report_metadata>');
  const range = node(meta.date_range, '<date_range>');
  const published = node(feedback.policy_published, '<policy_published>');
  const records = Array.isArray(feedback.record) ? feedback.record : [];
  if (records.length > MAX_RECORDS) throw new Refused(`more than ${MAX_RECORDS} records`);
  const policy: Record<string, string> = {};
  for (const k of ['domain', 'adkim', 'aspf', 'p', 'sp', 'pct', 'np', 'fo']) {
    const v = text(published[k]);
    if (v) policy[k] = v.slice(0, 256).toLowerCase();
  }
  if (!policy.domain) throw new Refused('<policy_published> names no domain');
  const begin = epoch(range.begin, 'date_range begin');
  const end = epoch(range.end, 'date_range end');
  if (end < begin) throw new Refused('date_range ends before it begins');
  return {
    reporter: { name: need(meta.org_name, 'org_name'), email: text(meta.email)?.slice(0, 256) ?? null },
    reportId: need(meta.report_id, 'report_id'),
    begin,
    end,
    policy,
    records: records.map(record),
  };
}

/** Unpacks and reads one report part; never throws. */
export function readDmarcReport(part: ReportPart): ReadResult {
  try {
    return { ok: true, report: readXml(unpack(part)) };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, reason: err.message };
    return { ok: false, reason: `unreadable report: ${(err as Error).message}`.slice(0, 300) };
  }
}
