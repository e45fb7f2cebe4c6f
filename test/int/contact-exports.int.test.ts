// Contact exports through the real API and the `contact-bulk` queue: every contact (or a
// segment's) as CSV with one column per property in use and per topic, downloadable once
// completed (409 before), and read back by an import with a mapping naming those columns.
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

describe('contact exports', () => {
  let api: TestApi;
  let org: SeededOrg;
  let admin: string;
  let wdeps: WorkerDeps;
  let worker: Worker;
  let topicId: string;

  before(async function () {
    this.timeout(60_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    admin = org.key.token;
    wdeps = workerDepsFor(api);
    worker = startContactBulkWorker(wdeps, { sweepEveryMs: 0 });
    topicId = (
      await api.request('POST', '/topics', { token: admin, body: { name: 'News', default_subscription: 'opt_in' } })
    ).json.id as string;
    const people = [
      { email: 'ann@example.com', first_name: 'Ann', properties: { plan: 'pro', seats: 3 } },
      { email: 'bob@example.com', last_name: 'Stone, Jr.', properties: { vip: true }, unsubscribed: true },
      { email: 'carl@example.com', topics: [{ id: topicId, subscription: 'opt_out' }] },
    ];
    for (const p of people)
      expect((await api.request('POST', '/contacts', { token: admin, body: p })).status).to.equal(201);
  });
  after(async () => {
    await worker.close();
    await wdeps.close();
    await api.close();
  });

  const completed = (id: string) =>
    waitFor(`export ${id}`, async () => {
      const r = await api.request('GET', `/contacts/exports/${id}`, { token: admin });
      return r.json.status === 'completed' ? r.json : null;
    });

  /** The export's CSV from its `download_url` (this test's server: the URL's path). */
  const fetchCsv = (url: string) =>
    fetch(`${api.url}${new URL(url).pathname}`, { headers: { authorization: `Bearer ${admin}` } });

  async function download(url: string): Promise<Record<string, string>[]> {
    const res = await fetchCsv(url);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    return parse(await res.text(), { columns: true }) as Record<string, string>[];
  }

  it('exports every contact with a column per property in use and per topic', async () => {
    const res = await api.request('POST', '/contacts/exports', { token: admin, body: {} });
    expect(res.status, res.text).to.equal(202);
    expect(res.json).to.include({ object: 'contact_export', status: 'queued', download_url: null });
    expect(res.json.id).to.match(/^exp_[0-9A-Z]{26}$/);
    const done = await completed(res.json.id as string);
    expect(done.rows).to.equal(3);
    const rows = await download(done.download_url as string);
    expect(Object.keys(rows[0]!)).to.deep.equal([
      'id',
      'email',
      'first_name',
      'last_name',
      'unsubscribed',
      'created_at',
      'properties.plan',
      'properties.seats',
      'properties.vip',
      `topic.${topicId}`,
    ]);
    const by = Object.fromEntries(rows.map((r) => [r.email, r]));
    expect(by['ann@example.com']).to.include({ first_name: 'Ann', 'properties.plan': 'pro', 'properties.seats': '3' });
    expect(by['bob@example.com']).to.include({
      last_name: 'Stone, Jr.',
      unsubscribed: 'true',
      'properties.vip': 'true',
    });
    expect(by['carl@example.com']![`topic.${topicId}`]).to.equal('opt_out');
    expect(by['ann@example.com']![`topic.${topicId}`]).to.equal('');
  });

  it("exports one segment's contacts", async () => {
    const seg = await api.request('POST', '/segments', {
      token: admin,
      body: { name: 'Pro', filter: { field: 'properties.plan', op: 'eq', value: 'pro' } },
    });
    const res = await api.request('POST', '/contacts/exports', { token: admin, body: { segment_id: seg.json.id } });
    const done = await completed(res.json.id as string);
    const rows = await download(done.download_url as string);
    expect(rows.map((r) => r.email)).to.deep.equal(['ann@example.com']);
    // Membership rows an automation wrote (add_to_segment / remove_from_segment) count too.
    await api.deps.sql`
      insert into segment_members (segment_id, contact_id, included)
      select ${seg.json.id as string}, id, email <> 'ann@example.com' from contacts
      where org_id = ${org.organization.id} and email in ('ann@example.com', 'bob@example.com')`;
    const again = await api.request('POST', '/contacts/exports', { token: admin, body: { segment_id: seg.json.id } });
    const members = await download((await completed(again.json.id as string)).download_url as string);
    expect(members.map((r) => r.email)).to.deep.equal(['bob@example.com']);
    const bad = await api.request('POST', '/contacts/exports', { token: admin, body: { segment_id: 'seg_nope' } });
    expect(bad.status).to.equal(422);
    expect(bad.json.error.code).to.equal('validation_error');
  });

  it('answers 409 for a download before the export is complete', async () => {
    await worker.pause();
    try {
      const res = await api.request('POST', '/contacts/exports', { token: admin, body: {} });
      const early = await api.request('GET', `/contacts/exports/${res.json.id}/download`, { token: admin });
      expect(early.status).to.equal(409);
      expect(early.json.error.code).to.equal('invalid_state');
    } finally {
      await worker.resume();
    }
  });

  it('gives a file the import reads back with a mapping of its columns', async () => {
    const res = await api.request('POST', '/contacts/exports', { token: admin, body: {} });
    const done = await completed(res.json.id as string);
    const file = await (await fetchCsv(done.download_url as string)).text();
    const mapping = {
      email: 'email',
      first_name: 'first_name',
      last_name: 'last_name',
      unsubscribed: 'unsubscribed',
      properties: { plan: 'properties.plan', seats: { column: 'properties.seats', type: 'number' } },
      topics: { [topicId]: `topic.${topicId}` },
    };
    const imp = await api.request('POST', `/contacts/imports?mapping=${encodeURIComponent(JSON.stringify(mapping))}`, {
      token: admin,
      raw: file,
      headers: { 'content-type': 'text/csv' },
    });
    expect(imp.status, imp.text).to.equal(202);
    const result = await waitFor('import', async () => {
      const r = await api.request('GET', `/contacts/imports/${imp.json.id}`, { token: admin });
      return r.json.status === 'completed' || r.json.status === 'failed' ? r.json : null;
    });
    // The same values back: nothing to change.
    expect(result, result.error as string).to.include({ rows: 3, created: 0, updated: 0, skipped: 3, failed: 0 });
  });
});
