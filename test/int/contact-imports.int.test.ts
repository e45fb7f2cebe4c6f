// Contact imports through the real API and the `contact-bulk` queue (docs/api/contacts.md
// "Imports"): CSV as the body or as a multipart file, the mapping (names, typed properties,
// topics, unsubscribed), per-row failures with their lines in the errors CSV, re-uploads,
// suppressed addresses, automations only when asked, a run stopped half-way and resumed by the
// sweeper, a file that is not CSV, and one of 50,000 rows.
import { expect } from 'chai';
import type { Worker } from 'bullmq';
import { parse } from 'csv-parse/sync';
import { scanTriggers } from '../../workers/automation.js';
import { processImport } from '../../workers/contact-import.js';
import { startContactBulkWorker, sweepContactBulk } from '../../workers/contact-bulk.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('contact imports', () => {
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
    const topic = await api.request('POST', '/topics', {
      token: admin,
      body: { name: 'News', default_subscription: 'opt_out' },
    });
    topicId = topic.json.id as string;
  });
  after(async () => {
    await worker.close();
    await wdeps.close();
    await api.close();
  });

  /** POST /contacts/imports with the CSV as the body (query: mapping, options). */
  async function upload(csv: string, query: Record<string, unknown> = {}, token = admin) {
    const qs = new URLSearchParams(
      Object.entries(query).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ).toString();
    return await api.request('POST', `/contacts/imports${qs ? `?${qs}` : ''}`, {
      token,
      raw: csv,
      headers: { 'content-type': 'text/csv' },
    });
  }

  async function finished(id: string, ms = 30_000) {
    return await waitFor(
      `import ${id}`,
      async () => {
        const r = await api.request('GET', `/contacts/imports/${id}`, { token: admin });
        return r.json.status === 'completed' || r.json.status === 'failed' ? r.json : null;
      },
      ms,
    );
  }

  async function errorsCsv(id: string): Promise<string[][]> {
    const res = await fetch(`${api.url}/api/v1/contacts/imports/${id}/errors`, {
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    return parse(await res.text()) as string[][];
  }

  const contact = async (email: string) => (await api.request('GET', `/contacts/${email}`, { token: admin })).json;

  it('imports a CSV body with a mapping: names, typed properties, a topic, unsubscribed', async () => {
    const csv = [
      'Email,First Name,Last,Plan,Seats,VIP,News,Opted out',
      'Ann@Example.com,Ann,Lee,pro,12,yes,opt_in,',
      'bob@example.com,Bob,,free,1.5,no,no,true',
      'carl@example.com,,,,,,,',
    ].join('\r\n');
    const mapping = {
      email: 'email',
      first_name: 'First Name',
      last_name: 'last',
      unsubscribed: 'Opted out',
      properties: { plan: 'Plan', seats: { column: 'Seats', type: 'number' }, vip: { column: 'VIP', type: 'boolean' } },
      topics: { [topicId]: 'News' },
    };
    const res = await upload(csv, { mapping });
    expect(res.status, res.text).to.equal(202);
    expect(res.json).to.include({ object: 'contact_import', status: 'queued', trigger_automations: false });
    expect(res.json.id).to.match(/^imp_[0-9A-Z]{26}$/);
    expect(res.json.errors_url).to.equal(`${api.deps.config.baseUrl}/api/v1/contacts/imports/${res.json.id}/errors`);
    const done = await finished(res.json.id as string);
    expect(done).to.include({ status: 'completed', rows: 3, total_rows: 3, created: 3, updated: 0, failed: 0 });
    const ann = await contact('ann@example.com');
    expect(ann).to.include({ first_name: 'Ann', last_name: 'Lee', unsubscribed: false });
    expect(ann.properties).to.deep.equal({ plan: 'pro', seats: 12, vip: true });
    const bob = await contact('bob@example.com');
    expect(bob).to.include({ first_name: 'Bob', last_name: null, unsubscribed: true });
    expect(bob.properties).to.deep.equal({ plan: 'free', seats: 1.5, vip: false });
    expect((await contact('carl@example.com')).properties).to.deep.equal({});
    const subs = await api.request('GET', `/contacts/${ann.id}/subscriptions`, { token: admin });
    expect(subs.json.topics[0]).to.include({ id: topicId, subscription: 'opt_in', explicit: true });
    const bobSubs = await api.request('GET', `/contacts/${bob.id}/subscriptions`, { token: admin });
    expect(bobSubs.json.topics[0]).to.include({ subscription: 'opt_out', explicit: true });
  });

  it('updates existing contacts: empty cells keep values, properties merge, an import never re-subscribes', async () => {
    const csv = [
      'email,first_name,last_name,unsubscribed,plan',
      'ann@example.com,,Smith,,team',
      'bob@example.com,,,false,',
    ].join('\n');
    const res = await upload(csv, {
      mapping: {
        email: 'email',
        first_name: 'first_name',
        last_name: 'last_name',
        unsubscribed: 'unsubscribed',
        properties: { plan: 'plan' },
      },
    });
    expect(res.status, res.text).to.equal(202);
    const done = await finished(res.json.id as string);
    // bob: unsubscribed stays true and nothing else was given, so the row changed nothing.
    expect(done).to.include({ rows: 2, created: 0, updated: 1, skipped: 1, failed: 0 });
    const ann = await contact('ann@example.com');
    expect(ann).to.include({ first_name: 'Ann', last_name: 'Smith' });
    expect(ann.properties).to.deep.equal({ plan: 'team', seats: 12, vip: true });
    expect((await contact('bob@example.com')).unsubscribed).to.equal(true);
  });

  it('reports each row it cannot apply, with its line, and applies the others whole', async () => {
    const csv = [
      'email,seats,name',
      'good1@example.com,3,G',
      'not-an-address,4,X',
      ',5,Y',
      'good2@example.com,many,Z',
      '"quoted, with comma@example.com",1,Q',
      'good3@example.com,"7",W',
    ].join('\n');
    const mapping = { email: 'email', first_name: 'name', properties: { seats: { column: 'seats', type: 'number' } } };
    const res = await upload(csv, { mapping });
    const done = await finished(res.json.id as string);
    expect(done).to.include({ rows: 6, created: 2, failed: 4 });
    const rows = await errorsCsv(res.json.id as string);
    expect(rows[0]).to.deep.equal(['line', 'email', 'reason']);
    expect(rows.slice(1).map((r) => r[0])).to.deep.equal(['3', '4', '5', '6']);
    expect(rows[1]![2]).to.match(/email is not an email address/);
    expect(rows[2]![2]).to.equal('the email cell is empty');
    expect(rows[3]).to.deep.include.members(['good2@example.com']);
    expect(rows[3]![2]).to.match(/property seats must be a number/);
    // A failed row changed nothing: good2 was not created with its name.
    expect((await api.request('GET', '/contacts/good2@example.com', { token: admin })).status).to.equal(404);
    expect((await contact('good3@example.com')).properties).to.deep.equal({ seats: 7 });
  });

  it('reads CR-only line ends (classic Mac, some spreadsheet exports) as it reads LF and CRLF', async () => {
    const csv = 'email,name\rcr1@example.com,"One, Two"\rbad-address,X\rcr2@example.com,Two\r\ncr3@example.com,Three\n';
    const res = await upload(csv, { mapping: { email: 'email', first_name: 'name' } });
    const done = await finished(res.json.id as string);
    expect(done).to.include({ status: 'completed', rows: 4, created: 3, failed: 1 });
    expect((await errorsCsv(res.json.id as string)).slice(1).map((r) => r[0])).to.deep.equal(['3']);
    expect(await contact('cr1@example.com')).to.include({ first_name: 'One, Two' });
    expect(await contact('cr3@example.com')).to.include({ first_name: 'Three' });
  });

  it('answers a re-upload of the same file and mapping with the same import (200), queues a new mapping', async () => {
    const csv = 'email\nsame1@example.com\nsame2@example.com\n';
    const first = await upload(csv);
    expect(first.status).to.equal(202);
    await finished(first.json.id as string);
    const again = await upload(csv);
    expect(again.status).to.equal(200);
    expect(again.json.id).to.equal(first.json.id);
    expect(again.json.status).to.equal('completed');
    const other = await upload(csv, { trigger_automations: true });
    expect(other.status).to.equal(202);
    expect(other.json.id).to.not.equal(first.json.id);
    const done = await finished(other.json.id as string);
    expect(done).to.include({ created: 0, skipped: 2 });
    const list = await api.request('GET', '/contacts/imports?limit=2', { token: admin });
    expect(list.json.data.map((i: { id: string }) => i.id)).to.deep.equal([other.json.id, first.json.id]);
  });

  it('takes a multipart file with the mapping as a field after it', async () => {
    const form = new FormData();
    form.append('file', new Blob(['Address,Given\nmulti@example.com,Mia\n'], { type: 'text/csv' }), 'list.csv');
    form.append('mapping', JSON.stringify({ email: 'Address', first_name: 'Given' }));
    const res = await fetch(`${api.url}/api/v1/contacts/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}` },
      body: form,
    });
    const json = (await res.json()) as { id: string; mapping: unknown };
    expect(res.status, JSON.stringify(json)).to.equal(202);
    expect(json.mapping).to.deep.equal({ email: 'Address', first_name: 'Given' });
    await finished(json.id);
    expect((await contact('multi@example.com')).first_name).to.equal('Mia');
  });

  it('refuses what it cannot import before queueing anything (415, 422)', async () => {
    const json = await api.request('POST', '/contacts/imports', { token: admin, body: { email: 'x' } });
    expect(json.status).to.equal(415);
    expect(json.json.error.code).to.equal('unsupported_media_type');
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['name\nann', {}, /mapping: the header row has no column "email" \(it has "name"\)/],
      ['email\na@b.c', { mapping: '{nope' }, /mapping is not valid JSON/],
      ['email\na@b.c', { mapping: { first_name: 'x' } }, /mapping\.email is required/],
      ['email\na@b.c', { mapping: { email: 'email', topics: { top_nope: 'email' } } }, /top_nope is not a topic/],
      ['', {}, /The file is empty/],
      ['"email\na@b.c', {}, /header row is not valid CSV/],
    ];
    for (const [csv, query, message] of cases) {
      const res = await upload(csv, query);
      expect(res.status, `${csv}: ${res.text}`).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.match(message);
    }
    const [left] = await api.deps.sql`select count(*)::int as n from contact_imports where status = 'receiving'`;
    expect(left!.n).to.equal(0);
    const [chunks] = await api.deps.sql`
      select count(*)::int as n from file_chunks where owner_id not in (select id from contact_imports)`;
    expect(chunks!.n).to.equal(0);
  });

  it('fails a file that stops being CSV half-way without applying any row', async () => {
    const csv = ['email', 'half1@example.com', 'half2@example.com', '"unclosed@example.com', 'half3@example.com'].join(
      '\n',
    );
    const res = await upload(csv);
    expect(res.status, res.text).to.equal(202);
    const done = await finished(res.json.id as string);
    expect(done.status).to.equal('failed');
    expect(done.error).to.match(/^line \d+: a quoted field is never closed/);
    expect(done.rows).to.equal(0);
    expect((await api.request('GET', '/contacts/half1@example.com', { token: admin })).status).to.equal(404);
    const [chunks] = await api.deps.sql`select count(*)::int as n from file_chunks where owner_id = ${res.json.id}`;
    expect(chunks!.n).to.equal(0);
    // Failed: the same upload may be tried again, as a new import.
    const again = await upload(csv);
    expect(again.status).to.equal(202);
    expect(again.json.id).to.not.equal(res.json.id);
    await finished(again.json.id as string);
  });

  it('imports suppressed addresses and counts them; suppressions stay in force', async () => {
    await api.request('POST', '/suppressions', { token: admin, body: { email: 'gone@example.com' } });
    await api.request('POST', '/suppressions', { token: admin, body: { pattern: '*@blocked.example' } });
    const res = await upload('email\ngone@example.com\nanyone@blocked.example\nfine@example.com\n');
    const done = await finished(res.json.id as string);
    expect(done).to.include({ created: 3, suppressed: 2 });
    expect((await contact('gone@example.com')).unsubscribed).to.equal(false);
    const still = await api.request('GET', '/suppressions?email=gone@example.com', { token: admin });
    expect(still.json.data).to.have.length(1);
  });

  it('starts contact_created automations only when asked', async () => {
    const auto = await api.request('POST', '/automations', {
      token: admin,
      body: { name: 'Welcome', trigger: { contact_created: true }, steps: [{ wait: '2h' }] },
    });
    expect(auto.status, auto.text).to.equal(201);
    const runs = async () =>
      (
        await api.deps.sql<{ email: string }[]>`
          select c.email from automation_runs r join contacts c on c.id = r.contact_id
          where r.automation_id = ${auto.json.id} order by c.email`
      ).map((r) => r.email);
    const quiet = await upload('email\nquiet@example.com\n');
    await finished(quiet.json.id as string);
    const loud = await upload('email\nloud@example.com\n', { trigger_automations: true });
    await finished(loud.json.id as string);
    await scanTriggers(wdeps);
    expect(await runs()).to.deep.equal(['loud@example.com']);
  });

  it('resumes an import stopped half-way where its last batch ended (sweeper), counting each row once', async function () {
    this.timeout(60_000);
    const lines = ['email,n', ...Array.from({ length: 1000 }, (_, i) => `resume${i}@example.com,${i}`)];
    // The worker loses Postgres after its third batch of 100 (as a killed process would stop):
    // the queue's worker is paused so that the test runs the import itself first.
    await worker.pause();
    const res = await upload(lines.join('\n'), {
      mapping: { email: 'email', properties: { n: { column: 'n', type: 'number' } } },
    });
    const id = res.json.id as string;
    const stop = Object.assign(new Error('Postgres connection lost'), { code: 'ECONNRESET' });
    const crashed = await processImport(wdeps, id, {
      batchRows: 100,
      afterBatch: (settled) => {
        if (settled >= 300) throw stop;
      },
    }).catch((err: unknown) => err);
    expect(crashed).to.equal(stop);
    const mid = (await api.request('GET', `/contacts/imports/${id}`, { token: admin })).json;
    expect(mid).to.include({ status: 'running', rows: 300, created: 300 });
    // Its lease runs out; the sweeper gives the import a new job, and the worker resumes it.
    await api.deps
      .sql`update contact_imports set lease_until = now() - interval '1 second', updated_at = now() - interval '1 minute' where id = ${id}`;
    // Swept before the worker resumes: a resumed worker could take the import's first job and
    // renew the lease before the sweep looks.
    expect(await sweepContactBulk(wdeps, 30)).to.be.greaterThanOrEqual(1);
    await worker.resume();
    const done = await finished(id);
    expect(done).to.include({ status: 'completed', rows: 1000, created: 1000, updated: 0, skipped: 0 });
    const [n] = await api.deps.sql`select count(*)::int as n from contacts where email like 'resume%@example.com'`;
    expect(n!.n).to.equal(1000);
  });

  it('imports 50,000 rows through the queue', async function () {
    this.timeout(180_000);
    const rows = Array.from({ length: 50_000 }, (_, i) => `bulk${i}@example.com,First${i},${i % 7}`);
    // A repeat of an address in the same batch is applied on top of the first one.
    rows.push('bulk7@example.com,Seven,7');
    const res = await upload(['email,first_name,score', ...rows].join('\n'), {
      mapping: { email: 'email', first_name: 'first_name', properties: { score: { column: 'score', type: 'number' } } },
    });
    expect(res.status, res.text).to.equal(202);
    const done = await finished(res.json.id as string, 170_000);
    expect(done).to.include({ status: 'completed', rows: 50_001, created: 50_000, updated: 1, failed: 0 });
    expect((await contact('bulk7@example.com')).first_name).to.equal('Seven');
    expect((await contact('bulk49999@example.com')).properties).to.deep.equal({ score: 49999 % 7 });
  });
});
