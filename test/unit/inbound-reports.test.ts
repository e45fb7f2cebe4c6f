import { expect } from 'chai';
import { simpleParser, type SimpleParserOptions } from 'mailparser';
import { detectReport, looksLikeBounce, parseDeliveryStatus, reportParts } from '../../shared/mail/reports.js';
import { classifyDsnRecipient, pickDsnEntry } from '../../workers/inbound-reports.js';
import { fixture, REPORT_FIXTURES } from '../helpers/inbound-fixtures.js';

const VARS = {
  VERP: 'b+rcp_01jd0000000000000000000000.abcdefghijklm@bounces.acme.test',
  RCPT: 'pat@example.net',
  OTHER: 'someone.else@example.net',
  FIXED: 'fbl@reply.acme.test',
  MESSAGE_ID: 'em_01JD0000000000000000000000@acme.test',
};

async function parse(raw: string) {
  const mail = await simpleParser(raw, { keepDeliveryStatus: true } as SimpleParserOptions);
  return { mail, report: detectReport(mail, raw) };
}

describe('shared/mail/reports: DSN and ARF fixtures', () => {
  for (const f of REPORT_FIXTURES) {
    it(`${f.file}: ${f.expected ? `${f.expected.type} ${JSON.stringify(f.expected)}` : 'nothing'}`, async () => {
      const { mail, report } = await parse(fixture(f.file, VARS));
      expect(report?.kind ?? null).to.equal(f.report);
      if (report) expect(report.original.messageId).to.equal(VARS.MESSAGE_ID);
      if (report?.kind === 'dsn') {
        const entry = pickDsnEntry(report.recipients, VARS.RCPT);
        if (!f.expected) return expect(entry).to.equal(null);
        expect(entry, 'a failed entry').to.not.equal(null);
        const v = classifyDsnRecipient(entry!);
        expect(f.expected).to.deep.equal({ type: 'email.bounced', bounceType: v.bounceType, detail: v.detail });
      } else if (report?.kind === 'arf') {
        const complaint = ['abuse', 'fraud', 'other'].includes(report.feedback.feedbackType);
        expect(complaint).to.equal(f.expected !== null);
        if (f.expected) expect(report.feedback.feedbackType).to.equal(f.expected.detail);
      } else {
        expect(looksLikeBounce(mail)).to.equal(f.expected?.type === 'email.bounced');
      }
    });
  }

  it('finds the VERP return path of a returned copy whose recipient was redacted (JMRP)', async () => {
    const { report } = await parse(fixture('microsoft-jmrp-arf.eml', VARS));
    expect(report?.kind).to.equal('arf');
    expect(report!.original.returnPath).to.equal(VARS.VERP);
    if (report?.kind === 'arf') expect(report.feedback.originalRcptTo).to.equal(null);
  });

  it('decodes a base64 delivery-status part', async () => {
    const status = [
      'Reporting-MTA: dns; mx.example.net',
      '',
      'Final-Recipient: rfc822; pat@example.net',
      'Action: failed',
      'Status: 5.1.1',
      'Diagnostic-Code: smtp; 550 5.1.1 No such user',
      '',
    ].join('\r\n');
    const b64 = Buffer.from(status)
      .toString('base64')
      .replace(/(.{76})/g, '$1\r\n');
    const raw = [
      'From: MAILER-DAEMON@mx.example.net',
      'To: x@bounces.acme.test',
      'Subject: Undelivered Mail Returned to Sender',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b64b"',
      '',
      '--b64b',
      'Content-Type: text/plain',
      '',
      'failed',
      '--b64b',
      'Content-Type: message/delivery-status',
      'Content-Transfer-Encoding: base64',
      '',
      b64,
      '--b64b--',
      '',
    ].join('\r\n');
    const { report } = await parse(raw);
    expect(report?.kind).to.equal('dsn');
    if (report?.kind !== 'dsn') return;
    expect(report.recipients).to.have.length(1);
    expect(classifyDsnRecipient(report.recipients[0]!)).to.include({ bounceType: 'hard', detail: 'NoEmail' });
    const parts = reportParts(raw, 'b64b');
    expect(parts.map((p) => p.type)).to.deep.equal(['text/plain', 'message/delivery-status']);
    expect(parts[1]!.body).to.contain('Status: 5.1.1');
  });

  it('bounces nobody when our recipient is only delayed while another one failed', () => {
    const entries = parseDeliveryStatus(
      [
        'Reporting-MTA: dns; mx.example.net',
        '',
        'Final-Recipient: rfc822; other@example.net',
        'Action: failed',
        'Status: 5.1.1',
        '',
        'Final-Recipient: rfc822; pat@example.net',
        'Action: delayed',
        'Status: 4.4.7',
      ].join('\n'),
    );
    expect(pickDsnEntry(entries, 'pat@example.net')).to.equal(null);
    // A forwarded address that the report names differently: the failed entry is taken.
    expect(pickDsnEntry(entries, 'pat@forwarder.example')?.finalRecipient).to.equal('other@example.net');
  });

  it('takes a 4.x.x final failure as soft General and a generic 5.0.0 by the diagnostic code', () => {
    const base = { finalRecipient: 'p@x.test', originalRecipient: null, action: 'failed', remoteMta: null };
    expect(classifyDsnRecipient({ ...base, status: '4.4.7', diagnostic: 'delivery time expired' })).to.include({
      bounceType: 'soft',
      detail: 'General',
    });
    expect(classifyDsnRecipient({ ...base, status: '5.0.0', diagnostic: '552 5.2.2 over quota' })).to.include({
      bounceType: 'soft',
      detail: 'MailboxFull',
    });
    expect(classifyDsnRecipient({ ...base, status: null, diagnostic: null })).to.include({
      bounceType: 'undetermined',
    });
  });

  it('does not take an out-of-office reply for a bounce', async () => {
    const { mail, report } = await parse(
      'From: Pat <pat@example.net>\r\nTo: x@bounces.acme.test\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\nBack Monday.\r\n',
    );
    expect(report).to.equal(null);
    expect(looksLikeBounce(mail)).to.equal(false);
  });
});
