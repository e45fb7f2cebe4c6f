// Hostile and heavy inbound mail, for the fault suite (bench/chaos/inbound-faults.ts) and the
// tests: a message built to hang a MIME parser, and DMARC aggregate reports of any size.
import { gzipSync } from 'node:zlib';

/**
 * A multipart of `parts` small text attachments, about 200 bytes a part (4,000 parts: about
 * 830 KB). Past mailparser's child-node limit (1000) its simpleParser never settles.
 */
export function partsBomb(to: string, parts: number): string {
  const head = `From: Someone <someone@example.net>\r\nTo: ${to}\r\nSubject: many parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n`;
  const body = Array.from(
    { length: parts },
    (_, i) =>
      `--b\r\nContent-Type: text/plain; name="a${i}.txt"\r\nContent-Disposition: attachment; filename="a${i}.txt"\r\n\r\n${'y'.repeat(100)}\r\n`,
  );
  return `${head}${body.join('')}--b--\r\n`;
}

/** An RFC 7489 aggregate report about `domain` from `reporter`, `records` sources, gzipped (.xml.gz). */
export function dmarcReportGz(
  reporter: string,
  domain: string,
  reportId: string,
  records: number,
): { filename: string; contentType: string; content: Buffer } {
  const end = Math.floor(Date.now() / 1000) - 3600;
  const record = (i: number) =>
    `<record><row><source_ip>10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}</source_ip><count>3</count>` +
    `<policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>pass</spf></policy_evaluated></row>` +
    `<identifiers><header_from>${domain}</header_from></identifiers><auth_results><dkim><domain>${domain}</domain>` +
    `<result>pass</result></dkim><spf><domain>bounces.${domain}</domain><result>pass</result></spf></auth_results></record>\n`;
  const xml =
    `<?xml version="1.0" encoding="UTF-8"?>\n<feedback><report_metadata><org_name>${reporter}</org_name>` +
    `<email>noreply-dmarc@${reporter}</email><report_id>${reportId}</report_id><date_range><begin>${end - 86_400}</begin>` +
    `<end>${end}</end></date_range></report_metadata><policy_published><domain>${domain}</domain><p>none</p></policy_published>\n` +
    Array.from({ length: records }, (_, i) => record(i)).join('') +
    '</feedback>\n';
  return {
    filename: `${reporter}!${domain}!${reportId}.xml.gz`,
    contentType: 'application/gzip',
    content: gzipSync(xml),
  };
}
