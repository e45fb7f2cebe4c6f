// The DMARC aggregate report samples of test/fixtures/dmarc (written after Google's, Microsoft's
// and Yahoo's published report formats), packed as each reporter sends them: Google a .zip,
// Microsoft and Yahoo a .xml.gz. Placeholders: {{DOMAIN}}, {{REPORT_ID}}, {{BEGIN}}, {{END}}
// (Unix seconds), {{OWN_IP}} (an address of the install).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';

const FIXTURES = new URL('../fixtures/dmarc/', import.meta.url);

export interface ReportVars {
  DOMAIN: string;
  REPORT_ID: string;
  OWN_IP: string;
  BEGIN?: string;
  END?: string;
}

export interface PackedReport {
  filename: string;
  contentType: string;
  content: Buffer;
}

export function dmarcXml(name: string, vars: ReportVars): string {
  const end = Math.floor(Date.now() / 1000) - 3600;
  const all: Record<string, string> = { BEGIN: String(end - 86_400), END: String(end), ...vars };
  let text = readFileSync(new URL(name, FIXTURES), 'utf8');
  for (const [k, v] of Object.entries(all)) text = text.split(`{{${k}}}`).join(v);
  return text;
}

function baseName(reporter: string, vars: ReportVars): string {
  return `${reporter}!${vars.DOMAIN}!${vars.BEGIN ?? 'b'}!${vars.END ?? 'e'}`;
}

export function zipped(xml: string | Buffer, name: string): PackedReport {
  const content = Buffer.from(zipSync({ [`${name}.xml`]: Buffer.from(xml) }, { level: 9 }));
  return { filename: `${name}.zip`, contentType: 'application/zip', content };
}

export function gzipped(xml: string | Buffer, name: string): PackedReport {
  return { filename: `${name}.xml.gz`, contentType: 'application/gzip', content: gzipSync(Buffer.from(xml)) };
}

/** Each reporter's sample, packed the way that reporter sends it. */
export function providerReports(vars: Omit<ReportVars, 'REPORT_ID'>): { reporter: string; part: PackedReport }[] {
  const v = (id: string) => ({ ...vars, REPORT_ID: id });
  return [
    { reporter: 'google.com', part: zipped(dmarcXml('google.xml', v('g-1')), baseName('google.com', v('g-1'))) },
    {
      reporter: 'Outlook.com',
      part: gzipped(dmarcXml('microsoft.xml', v('m-1')), baseName('enterprise.protection.outlook.com', v('m-1'))),
    },
    { reporter: 'Yahoo', part: gzipped(dmarcXml('yahoo.xml', v('y-1')), baseName('yahoo.com', v('y-1'))) },
  ];
}

/** Valid-looking XML of `bytes` bytes that compresses extremely well (a decompression bomb). */
export function bombXml(bytes: number): Buffer {
  const head = '<?xml version="1.0"?><feedback><report_metadata><org_name>';
  const buf = Buffer.alloc(bytes, 0x61);
  buf.write(head, 0, 'latin1');
  return buf;
}

/**
 * Google's sample with `records` records (distinct sources): a large, valid report, what a busy
 * domain's daily report looks like and what a flood of reports is made of.
 */
export function largeXml(vars: ReportVars, records: number): string {
  const xml = dmarcXml('google.xml', vars);
  const first = xml.indexOf('<record>');
  const one = xml.slice(first, xml.indexOf('</record>', first) + '</record>'.length);
  const many = Array.from({ length: records }, (_, i) =>
    one.replace(
      `<source_ip>${vars.OWN_IP}</source_ip>`,
      `<source_ip>10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}</source_ip>`,
    ),
  );
  return xml.slice(0, first) + many.join('\n') + xml.slice(xml.lastIndexOf('</record>') + '</record>'.length);
}
