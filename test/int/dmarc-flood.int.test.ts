// A flood of DMARC aggregate reports through the real MX, inbound worker, dmarc-report queue and
// delivery worker of one process: the reports are read one at a time on a parse thread, so a
// transactional message sent after the flood is delivered while the flood is still being read
// (asserted on order, not time); one reporter's reports past DMARC_REPORTER_HOURLY_MAX in the
// hour are kept raw and skipped with DMARC_REPORT_RATE_LIMITED, and another reporter's are read.
import { expect } from 'chai';
import { createTransport } from 'nodemailer';
import { createLogger } from '../../shared/logger.js';
import { startDeliveryWorker } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { startDmarcReportWorker } from '../../workers/dmarc-report.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { largeXml, zipped, type PackedReport } from '../helpers/dmarc-fixtures.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { startMx, type TestMx } from '../helpers/mx.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { workerDepsFor } from '../helpers/workers.js';

const OWN_IP = '192.0.2.10';
const LIMIT = 5;

describe('DMARC report flood (MX → inbound → dmarc-report queue, beside delivery)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let sink: Sink;
  let mx: TestMx;
  let deps: WorkerDeps;
  let closeWorkers: () => Promise<void>;
  const lines: string[] = [];

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const domainId = org.domains['acme.test']!.id;
    await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${domainId}`;
    await giveDkimKey(api.deps.sql, domainId);
    sink = await startSink();
    mx = await startMx(api, { maxBytes: 2 * 1024 * 1024 });
    const base = workerDepsFor(api, {
      SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}?tls_verify=false`,
      DMARC_REPORTER_HOURLY_MAX: String(LIMIT),
      // A loaded test machine reads a large report slowly: the time limit is not what is tested here.
      INBOUND_PARSE_SECONDS: '300',
    });
    deps = { ...base, logger: createLogger('info', 'test', { write: (l: string) => void lines.push(l) }) };
    // One process, one event loop: inbound, DMARC reports and transactional delivery together.
    const inbound = startInboundWorker(deps);
    const dmarc = startDmarcReportWorker(deps);
    const delivery = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
    closeWorkers = async () => {
      await Promise.all([inbound.close(), dmarc.close(), delivery.close()]);
      await deps.close();
    };
  });
  after(async () => {
    await closeWorkers?.();
    await mx?.close();
    await sink?.close();
    await api?.close();
  });

  async function mailReport(reporter: string, part: PackedReport): Promise<string> {
    const transport = createTransport({ host: '127.0.0.1', port: mx.port, secure: false, ignoreTLS: true });
    try {
      const info = await transport.sendMail({
        envelope: { from: `noreply-dmarc@${reporter}`, to: ['dmarc@bounces.acme.test'] },
        from: `noreply-dmarc@${reporter}`,
        to: 'dmarc@bounces.acme.test',
        subject: `Report domain: acme.test Submitter: ${reporter} Report-ID: ${part.filename}`,
        text: 'This is an aggregate report from a DMARC reporter.',
        attachments: [part],
      });
      return /queued as (inb_[0-9A-Z]+)/.exec(info.response)![1]!;
    } finally {
      transport.close();
    }
  }

  const report = (id: string, records: number) =>
    zipped(largeXml({ DOMAIN: 'acme.test', REPORT_ID: id, OWN_IP }, records), `flood!acme.test!${id}`);
  const states = async (ids: string[]) =>
    await api.deps.sql<{ id: string; status: string; error: string | null }[]>`
      select id, status, error from inbound_messages where id = any(${ids}) order by id`;

  it('delivers a transactional message while a flood is read, and skips the reporter’s excess with a log code', async function () {
    this.timeout(240_000);
    // Twice the hourly limit, each a large report (10,000 records, about 6 MB of XML).
    const flood: string[] = [];
    for (let i = 0; i < 2 * LIMIT; i++) flood.push(await mailReport('flood.example', report(`f-${i}`, 10_000)));

    const sent = await api.request('POST', '/emails', {
      token: org.key.token,
      body: { from: 'billing@acme.test', to: ['dana@example.net'], subject: 'Your receipt', text: 'Thanks.' },
    });
    expect(sent.status, JSON.stringify(sent.json)).to.equal(200);
    const emailId = sent.json.id as string;
    await waitFor(
      'the receipt delivered',
      async () => {
        const [e] = await api.deps.sql`select 1 from events where email_id = ${emailId} and type = 'email.delivered'`;
        return e;
      },
      60_000,
    );
    // The receipt went out while the flood was still queued or being read.
    const atDelivery = await states(flood);
    expect(atDelivery.filter((r) => r.status === 'stored').length).to.be.greaterThan(0);

    const settled = await waitFor(
      'the flood settled',
      async () => {
        const rows = await states(flood);
        return rows.every((r) => r.status !== 'stored') && rows;
      },
      200_000,
    );
    const read = settled.filter((r) => r.status === 'processed');
    const skipped = settled.filter((r) => r.status === 'unparsed');
    expect(read.map((r) => r.error)).to.deep.equal(Array(LIMIT).fill(null));
    expect(skipped.map((r) => r.error)).to.deep.equal(
      Array(LIMIT).fill(`DMARC report skipped: flood.example sent more than ${LIMIT} reports this hour`),
    );
    const limited = lines.filter((l) => l.includes('"event":"DMARC_REPORT_RATE_LIMITED"'));
    expect(limited).to.have.length(LIMIT);
    expect(limited.every((l) => l.includes('"reporter":"flood.example"'))).to.equal(true);
    const [stored] = await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from dmarc_reports where org_id = ${org.organization.id}`;
    expect(stored!.n).to.equal(LIMIT);

    // Another reporter in the same hour is read.
    const other = await mailReport('reporter.example', report('o-1', 10));
    const done = await waitFor('the other reporter’s report', async () => {
      const [r] = await states([other]);
      return r!.status !== 'stored' && r;
    });
    expect(done).to.include({ status: 'processed', error: null });
  });
});
