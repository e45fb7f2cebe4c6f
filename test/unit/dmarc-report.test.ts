import { expect } from 'chai';
import * as fflate from 'fflate';
import { readDmarcReport, reportPart, MAX_RECORDS, type ReportPart } from '../../shared/mail/dmarc-report.js';
import { bombXml, dmarcXml, gzipped, providerReports, zipped } from '../helpers/dmarc-fixtures.js';

const VARS = { DOMAIN: 'acme.test', OWN_IP: '192.0.2.10' };

function read(part: ReportPart) {
  return readDmarcReport(part);
}

describe('shared/mail/dmarc-report: aggregate reports', () => {
  it('reads the Google (zip), Microsoft (gzip) and Yahoo (gzip) samples', () => {
    const [google, microsoft, yahoo] = providerReports(VARS).map((r) => read(r.part)) as [
      ReturnType<typeof read>,
      ReturnType<typeof read>,
      ReturnType<typeof read>,
    ];
    for (const r of [google, microsoft, yahoo]) expect(r.ok, JSON.stringify(r)).to.equal(true);
    if (!google.ok || !microsoft.ok || !yahoo.ok) return;
    expect(google.report.reporter).to.deep.equal({ name: 'google.com', email: 'noreply-dmarc-support@google.com' });
    expect(google.report.policy).to.include({ domain: 'acme.test', p: 'none', adkim: 'r' });
    expect(google.report.records.map((r) => [r.sourceIp, r.count, r.dkimAligned, r.spfAligned])).to.deep.equal([
      ['192.0.2.10', 40, true, true],
      ['203.0.113.77', 3, false, false],
    ]);
    expect(google.report.records[0]!.auth.dkim).to.deep.equal([
      { domain: 'acme.test', selector: 'tern', result: 'pass' },
    ]);
    // Microsoft: namespaces on <feedback>, envelope_to, a policy_evaluated <reason>, an IPv6 source.
    expect(microsoft.report.reporter.name).to.equal('Outlook.com');
    expect(microsoft.report.records[1]).to.deep.include({
      sourceIp: '2001:db8::25',
      count: 2,
      disposition: 'quarantine',
      envelopeFrom: 'spoofer.example',
    });
    expect(microsoft.report.records[0]!.auth.spf).to.deep.equal([
      { domain: 'bounces.acme.test', scope: 'mfrom', result: 'pass' },
    ]);
    expect(yahoo.report.records).to.have.length(1);
    expect(yahoo.report.records[0]).to.include({ disposition: 'reject', count: 5 });
    expect(yahoo.report.end.getTime()).to.be.greaterThan(yahoo.report.begin.getTime());
  });

  it('takes plain XML, and finds the report among the parts by type or file name', () => {
    const xml = Buffer.from(dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'plain' }));
    const parts = [
      { filename: 'logo.png', contentType: 'image/png', content: Buffer.from('png') },
      { filename: 'report.xml', contentType: 'application/octet-stream', content: xml },
    ];
    const part = reportPart(parts);
    expect(part?.filename).to.equal('report.xml');
    const r = read(part!);
    expect(r.ok && r.report.reportId).to.equal('plain');
  });

  it('refuses malformed XML, a DOCTYPE, missing fields and bad values with a reason', () => {
    const cases: [string, RegExp][] = [
      [dmarcXml('malformed.xml', { ...VARS, REPORT_ID: 'm' }), /malformed XML/],
      [dmarcXml('entity-expansion.xml', { ...VARS, REPORT_ID: 'e' }), /DOCTYPE/],
      ['<feedback><report_metadata/></feedback>', /report_metadata|org_name|date_range|policy_published/],
      [dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'y' }).replace('203.0.113.77', 'not-an-ip'), /source_ip/],
      [dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'y' }).replace('<count>5</count>', '<count>-5</count>'), /count/],
      [dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'y' }).replace('>reject<', '>discard<'), /disposition/],
      ['just text, not a report', /malformed XML/],
    ];
    for (const [xml, reason] of cases) {
      const r = read(gzipped(xml, 'case'));
      expect(r.ok, xml.slice(0, 60)).to.equal(false);
      if (!r.ok) expect(r.reason).to.match(reason);
    }
  });

  it('refuses corrupt archives', () => {
    const good = gzipped(dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'c' }), 'c');
    const cut = { ...good, content: good.content.subarray(0, good.content.length - 20) };
    expect(read(cut)).to.deep.include({ ok: false });
    const zip = zipped(dmarcXml('google.xml', { ...VARS, REPORT_ID: 'z' }), 'z');
    const broken = Buffer.from(zip.content);
    broken.fill(0x55, 40, 120);
    expect(read({ ...zip, content: broken })).to.deep.include({ ok: false });
    const { zipSync } = fflate;
    const noXml = Buffer.from(zipSync({ 'report.txt': Buffer.from('not xml') }));
    expect(read({ ...zip, content: noXml })).to.deep.equal({ ok: false, reason: 'the zip holds no .xml file' });
  });

  it('stops unpacking a gzip or zip bomb at its bound instead of inflating it', () => {
    const bomb = bombXml(24 * 1024 * 1024);
    for (const part of [gzipped(bomb, 'bomb'), zipped(bomb, 'bomb')]) {
      expect(part.content.length).to.be.lessThan(256 * 1024);
      const r = read(part);
      expect(r.ok).to.equal(false);
      // The bound: at most 16 MiB, and here 200 times the packed size.
      const bound = Number(/unpacks to more than (\d+) bytes/.exec(r.ok ? '' : r.reason)?.[1]);
      expect(bound).to.equal(Math.min(16 * 1024 * 1024, Math.max(1024 * 1024, part.content.length * 200)));
    }
  });

  it(`refuses more than MAX_RECORDS (${MAX_RECORDS}) records`, () => {
    const xml = dmarcXml('yahoo.xml', { ...VARS, REPORT_ID: 'many' });
    // Distinct sources, as a real report's are (a repeated one would trip the ratio bound first).
    const records = Array.from(
      { length: MAX_RECORDS + 1 },
      (_, i) =>
        `<record><row><source_ip>10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}</source_ip><count>${i % 97}</count>` +
        '<policy_evaluated><disposition>none</disposition></policy_evaluated></row></record>',
    );
    const many = xml.replace(/<record>[\s\S]*<\/record>/, records.join(''));
    const r = read(gzipped(many, 'many'));
    expect(r.ok).to.equal(false);
    if (!r.ok) expect(r.reason).to.match(new RegExp(`more than ${MAX_RECORDS} records`));
  });
});
