// Issue 17 item 6 through the real MX, inbound queue and API: DMARC aggregate reports mailed to
// dmarc@bounces.<domain> (shaped like Google's, Microsoft's and Yahoo's) are stored once each and
// summarised by GET /domains/{id}/dmarc; malformed, hostile and oversized ones are refused
// without harm, and the MX and worker go on taking reports.
import { expect } from 'chai';
import { createTransport } from 'nodemailer';
import { ConsoleClient } from '../helpers/console.js';
import { bombXml, dmarcXml, gzipped, providerReports, zipped, type PackedReport } from '../helpers/dmarc-fixtures.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { startMxWithWorker } from '../helpers/mx.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const OWN_IP = '192.0.2.10';
const RUA = 'dmarc@bounces.acme.test';

describe('DMARC aggregate reports (MX → worker → GET /domains/{id}/dmarc)', () => {
  let dns: TestDns;
  let api: TestApi;
  let org: SeededOrg;
  let port: number;
  let closeMx: () => Promise<void>;

  before(async () => {
    dns = await startDns();
    dns.a('mx.tern.test', [OWN_IP]);
    api = await startApi({ env: { DNS_SERVERS: dns.server, MX_HOST: 'mx.tern.test' } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'other.test' }] });
    const mx = await startMxWithWorker(api, { maxBytes: 2 * 1024 * 1024 });
    port = mx.port;
    closeMx = mx.close;
  });
  after(async () => {
    await closeMx?.();
    await api?.close();
    await dns?.close();
  });

  async function mailReport(part: PackedReport | null, to = RUA): Promise<string> {
    const transport = createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
    try {
      const info = await transport.sendMail({
        from: 'noreply-dmarc-support@google.com',
        to,
        subject: `Report domain: acme.test Submitter: reporter Report-ID: ${part?.filename ?? 'none'}`,
        text: 'This is an aggregate report from a DMARC reporter.',
        attachments: part ? [{ filename: part.filename, content: part.content, contentType: part.contentType }] : [],
      });
      const id = /queued as (inb_[0-9A-Z]+)/.exec(info.response)![1]!;
      return (
        await waitFor(
          `inbound ${id} processed`,
          async () => {
            const [row] = await api.deps.sql`select * from inbound_messages where id = ${id} and status = 'processed'`;
            return row;
          },
          20_000,
        )
      ).id as string;
    } finally {
      transport.close();
    }
  }

  const errorOf = async (id: string) => {
    const [row] = await api.deps.sql`select kind, error from inbound_messages where id = ${id}`;
    return row!;
  };

  const summary = async (days = 30) => {
    const d = org.domains['acme.test']!;
    return await api.request('GET', `/domains/${d.id}/dmarc?days=${days}`, { token: org.key.token });
  };

  it('suggests a DMARC record whose rua is an address the MX takes', async () => {
    const created = await api.request('POST', '/domains', { token: org.key.token, body: { name: 'new.test' } });
    const dmarc = created.json.records.find((r: { record: string }) => r.record === 'DMARC');
    expect(dmarc.value).to.equal('v=DMARC1; p=none; rua=mailto:dmarc@bounces.new.test;');
    expect(RUA).to.equal(`dmarc@bounces.${'acme.test'}`);
  });

  it('stores the Google, Microsoft and Yahoo reports and summarises them by source and reporter', async () => {
    for (const { part } of providerReports({ DOMAIN: 'acme.test', OWN_IP })) {
      const id = await mailReport(part);
      expect(await errorOf(id)).to.deep.equal({ kind: 'dmarc_report', error: null });
    }
    const res = await summary();
    expect(res.status).to.equal(200);
    expect(res.json).to.include({ object: 'dmarc_summary', domain: 'acme.test', days: 30 });
    expect(res.json.reporters).to.deep.equal([
      { name: 'google.com', email: 'noreply-dmarc-support@google.com', reports: 1, messages: 43 },
      { name: 'Outlook.com', email: 'dmarcreport@microsoft.com', reports: 1, messages: 11 },
      { name: 'Yahoo', email: 'dmarchelp@yahooinc.com', reports: 1, messages: 5 },
    ]);
    expect(res.json.sources).to.deep.equal([
      {
        ip: OWN_IP,
        own: true,
        messages: 49,
        spf_aligned: 40,
        dkim_aligned: 49,
        disposition: { none: 49, quarantine: 0, reject: 0 },
        reporters: ['Outlook.com', 'google.com'],
      },
      {
        ip: '203.0.113.77',
        own: false,
        messages: 8,
        spf_aligned: 0,
        dkim_aligned: 0,
        disposition: { none: 3, quarantine: 0, reject: 5 },
        reporters: ['Yahoo', 'google.com'],
      },
      {
        ip: '2001:db8::25',
        own: false,
        messages: 2,
        spf_aligned: 0,
        dkim_aligned: 0,
        disposition: { none: 0, quarantine: 2, reject: 0 },
        reporters: ['Outlook.com'],
      },
    ]);
  });

  it('shows the summary on the domain in the console, sources not of this install said in words', async () => {
    const browser = new ConsoleClient(api.url);
    expect((await browser.login(org.user.email, org.user.password)).status).to.equal(303);
    const page = await browser.get(`/console/domains/${org.domains['acme.test']!.id}`);
    expect(page.status).to.equal(200);
    const section = page.text;
    expect(section).to.contain('DMARC reports, last 30 days');
    // Each cell carries its column's name (the phone layout's label).
    expect(section).to.match(
      /<code>192\.0\.2\.10<\/code><\/td>\s*<td data-label="Sender">this install<\/td>\s*<td data-label="Messages">49<\/td>/,
    );
    expect(section).to.match(/<code>203\.0\.113\.77<\/code><\/td>\s*<td data-label="Sender">not this install<\/td>/);
    const other = (await browser.get(`/console/domains/${org.domains['other.test']!.id}`)).text;
    expect(other).to.contain('No aggregate reports yet');
  });

  it('stores a report sent twice once', async () => {
    const [google] = providerReports({ DOMAIN: 'acme.test', OWN_IP });
    await mailReport(google!.part);
    const res = await summary();
    expect(res.json.reporters[0]).to.include({ name: 'google.com', reports: 1, messages: 43 });
  });

  it('refuses malformed, hostile, foreign and oversized reports without harm, and keeps taking good ones', async () => {
    const before = (await summary()).json;
    const vars = { DOMAIN: 'acme.test', OWN_IP };
    const refused: [PackedReport | null, RegExp][] = [
      [gzipped(dmarcXml('malformed.xml', { ...vars, REPORT_ID: 'bad-1' }), 'bad-1'), /malformed XML/],
      [gzipped(dmarcXml('entity-expansion.xml', { ...vars, REPORT_ID: 'bad-2' }), 'bad-2'), /DOCTYPE/],
      [zipped(bombXml(24 * 1024 * 1024), 'bomb'), /unpacks to more than/],
      [gzipped(bombXml(24 * 1024 * 1024), 'bomb'), /unpacks to more than/],
      [gzipped(dmarcXml('yahoo.xml', { ...vars, DOMAIN: 'other.test', REPORT_ID: 'bad-3' }), 'x'), /not acme\.test/],
      [null, /no zip, gzip or XML attachment/],
    ];
    for (const [part, reason] of refused) {
      const row = await errorOf(await mailReport(part));
      expect(row.kind).to.equal('dmarc_report');
      expect(row.error)
        .to.match(/^DMARC report refused: /)
        .and.to.match(reason);
    }
    // Over the MX's size limit: 552 at DATA, nothing stored.
    const huge = {
      filename: 'huge.xml.gz',
      contentType: 'application/gzip',
      content: Buffer.alloc(3 * 1024 * 1024, 7),
    };
    const [count] = await api.deps.sql`select count(*)::int as n from inbound_messages`;
    const err = await mailReport(huge).then(
      () => null,
      (e: { responseCode?: number }) => e,
    );
    expect(err?.responseCode).to.equal(552);
    const [after] = await api.deps.sql`select count(*)::int as n from inbound_messages`;
    expect(after!.n).to.equal(count!.n);
    expect((await summary()).json).to.deep.equal(before);

    // Still running: the next good report is stored.
    const good = gzipped(dmarcXml('yahoo.xml', { ...vars, REPORT_ID: 'y-2' }), 'y-2');
    expect((await errorOf(await mailReport(good))).error).to.equal(null);
    const now = (await summary()).json;
    expect(now.reporters.find((r: { name: string }) => r.name === 'Yahoo')).to.include({ reports: 2, messages: 10 });
  });

  it('counts only reports that ended within `days`, and validates the query (422)', async () => {
    const end = Math.floor(Date.now() / 1000) - 5 * 86_400;
    const old = dmarcXml('yahoo.xml', {
      DOMAIN: 'acme.test',
      OWN_IP,
      REPORT_ID: 'old',
      BEGIN: String(end - 86_400),
      END: String(end),
    });
    await mailReport(gzipped(old, 'old'));
    const week = (await summary(7)).json.reporters.find((r: { name: string }) => r.name === 'Yahoo');
    const three = (await summary(3)).json.reporters.find((r: { name: string }) => r.name === 'Yahoo');
    expect(week.reports - three.reports).to.equal(1);
    for (const days of [0, 366]) {
      const res = await summary(days);
      expect(res.status).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
    }
  });

  it("shows a reporter's name with its XML references decoded, once, in the API and the console", async () => {
    const xml = dmarcXml('yahoo.xml', { DOMAIN: 'acme.test', OWN_IP, REPORT_ID: 'ent-1' }).replace(
      '<org_name>Yahoo</org_name>',
      '<org_name>AT&amp;T &#x26; Sons &lt;dmarc&gt; &amp;amp;</org_name>',
    );
    expect((await errorOf(await mailReport(gzipped(xml, 'ent-1')))).error).to.equal(null);
    const names = (await summary()).json.reporters.map((r: { name: string }) => r.name);
    expect(names).to.include('AT&T & Sons <dmarc> &amp;');
    const browser = new ConsoleClient(api.url);
    expect((await browser.login(org.user.email, org.user.password)).status).to.equal(303);
    const page = (await browser.get(`/console/domains/${org.domains['acme.test']!.id}`)).text;
    expect(page).to.contain('AT&#38;T &#38; Sons &#60;dmarc&#62; &#38;amp; (1 reports');
  });

  it('is for ADMIN keys of the domain (403 forbidden for SEND; 404 for a key restricted to another domain)', async () => {
    const d = org.domains['acme.test']!;
    const sendKey = await org.mint({ permission: 'SEND' });
    const denied = await api.request('GET', `/domains/${d.id}/dmarc`, { token: sendKey.token });
    expect(denied.status).to.equal(403);
    expect(denied.json.error.code).to.equal('forbidden');
    const other = await org.mint({ permission: 'ADMIN', domains: ['other.test'] });
    const hidden = await api.request('GET', `/domains/${d.id}/dmarc`, { token: other.token });
    expect(hidden.status).to.equal(404);
    expect(hidden.json.error.code).to.equal('not_found');
  });
});
