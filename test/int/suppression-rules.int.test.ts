// Suppression rules and suppressions in bulk (docs/api/suppressions.md): `pattern` rows through
// the API (the glob syntax, 422 for others), checked at send time by the delivery worker for
// messages sent through POST /emails (live key, a smarthost sink) and by broadcasts; a CSV of
// 10,000 rules imported in one request and matched exactly; the CSV export read back by the import.
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import { processBroadcastBatch } from '../../workers/broadcast.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { findSuppressedEmails } from '../../shared/db/suppressions.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('suppression rules and bulk suppressions', () => {
  let api: TestApi;
  let org: SeededOrg;
  let admin: string;
  let sink: Sink;
  let wdeps: WorkerDeps;
  let worker: DeliveryWorkers;

  before(async function () {
    this.timeout(60_000);
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await unthrottle(api, org.organization.id);
    for (const d of ['acme.test', 'beta.test']) {
      await api.deps.sql`update domains set verified_at = now() - interval '60 days' where id = ${org.domains[d]!.id}`;
      await giveDkimKey(api.deps.sql, org.domains[d]!.id);
    }
    admin = org.key.token;
    sink = await startSink();
    wdeps = workerDepsFor(api, { SMTP_SMARTHOST: `smtp://127.0.0.1:${sink.port}?tls_verify=false` });
    worker = await startDeliveryWorker(wdeps, { sweepEverySeconds: 0 });
  });
  after(async () => {
    await worker.close();
    await wdeps.close();
    await sink.close();
    await api.close();
  });

  const post = (body: unknown, token = admin) => api.request('POST', '/suppressions', { token, body });

  /** POST /suppressions/imports with the CSV as the body. */
  const importCsv = (csv: string, query = '', token = admin) =>
    api.request('POST', `/suppressions/imports${query}`, { token, raw: csv, headers: { 'content-type': 'text/csv' } });

  describe('POST /suppressions {pattern}', () => {
    it('adds a rule (lower-cased, runs of * folded), then answers 200 with it', async () => {
      const res = await post({ pattern: '*@Blocked.TEST' });
      expect(res.status, res.text).to.equal(201);
      expect(res.json).to.deep.include({ object: 'suppression', email: null, pattern: '*@blocked.test', domain: null });
      expect((await post({ pattern: '**@blocked.test' })).json.id).to.equal(res.json.id);
      expect((await post({ pattern: '*@blocked.test' })).status).to.equal(200);
    });

    it('refuses other syntaxes with 422 naming what is wrong', async () => {
      const cases: [unknown, RegExp][] = [
        [{ pattern: 'bounce?@x.test' }, /wildcard other than `\*`/],
        [{ pattern: '[ab]*@x.test' }, /wildcard other than `\*`/],
        [{ pattern: 'noat*' }, /exactly one `@`/],
        [{ pattern: 'a*@b@c.test' }, /exactly one `@`/],
        [{ pattern: 'ann@x.test' }, /has no `\*`: suppress a single address with `email`/],
        [{ pattern: '*@*' }, /would stop every message/],
        [{ pattern: '*@ex*ample.test' }, /domain must be a domain name/],
        [{ pattern: 'a b*@x.test' }, /local part may hold only/],
        [{ email: '*@x.test' }, /body\.email contains `\*`/],
        [{ email: 'a@x.test', pattern: '*@x.test' }, /exactly one of email/],
      ];
      for (const [body, message] of cases) {
        const res = await post(body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.json.error.code).to.equal('validation_error');
        expect(res.json.error.message, JSON.stringify(body)).to.match(message);
      }
    });

    it('lists rules with `pattern`, filters by type, reads and deletes one by its pattern', async () => {
      await post({ pattern: 'noreply*@*' });
      const rules = await api.request('GET', '/suppressions?type=pattern', { token: admin });
      expect(rules.json.data.map((s: { pattern: string }) => s.pattern)).to.include.members([
        '*@blocked.test',
        'noreply*@*',
      ]);
      expect(rules.json.data.every((s: { email: null }) => s.email === null)).to.equal(true);
      const one = await api.request('GET', `/suppressions/${encodeURIComponent('noreply*@*')}`, { token: admin });
      expect(one.json.pattern).to.equal('noreply*@*');
      const gone = await api.request('DELETE', `/suppressions/${one.json.id}`, { token: admin });
      expect(gone.json).to.deep.include({ deleted: true, pattern: 'noreply*@*', email: null });
    });

    it('needs a domain of its own from a restricted key', async () => {
      const r = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
      const res = await post({ pattern: '*@x.test' }, r.token);
      expect(res.status).to.equal(403);
      expect(res.json.error.code).to.equal('forbidden_domain');
      expect((await post({ pattern: '*@x.test', domain: 'acme.test' }, r.token)).status).to.equal(201);
    });
  });

  describe('at send time', () => {
    const statusOf = async (emailId: string) =>
      await api.deps.sql<{ email: string; status: string }[]>`
        select email, status from email_recipients where email_id = ${emailId} order by email`;

    it('rejects the recipients a rule matches, for the API and the delivery worker alike', async () => {
      await post({ pattern: '*@*.corp.test' });
      await post({ pattern: 'bounce-*@*' });
      await post({ pattern: 'a_b*@under.test' });
      await post({ pattern: '*@beta-only.test', domain: 'beta.test' });
      const to = [
        'ann@blocked.test', // *@blocked.test
        'x@mail.corp.test', // *@*.corp.test
        'x@corp.test', // not a subdomain: delivered
        'bounce-7@any.test', // bounce-*@*
        'axb@under.test', // `_` is a character, not a wildcard: delivered
        'a_bc@under.test', // a_b*@under.test
        'who@beta-only.test', // a rule of beta.test: a send from acme.test is delivered
        'ok@fine.test',
      ];
      const sent = await api.request('POST', '/emails', {
        token: admin,
        body: { from: 'hello@acme.test', to, subject: 'Rules', text: 'Hi' },
      });
      expect(sent.status, sent.text).to.equal(200);
      const id = sent.json.id as string;
      const rows = await waitFor('settled recipients', async () => {
        const r = await statusOf(id);
        return r.every((x) => x.status === 'delivered' || x.status === 'rejected') ? r : null;
      });
      const byStatus = (s: string) => rows.filter((r) => r.status === s).map((r) => r.email);
      expect(byStatus('rejected')).to.deep.equal([
        'a_bc@under.test',
        'ann@blocked.test',
        'bounce-7@any.test',
        'x@mail.corp.test',
      ]);
      expect(byStatus('delivered')).to.deep.equal([
        'axb@under.test',
        'ok@fine.test',
        'who@beta-only.test',
        'x@corp.test',
      ]);
      const [ev] = await api.deps.sql`
        select detail from events where email_id = ${id} and type = 'email.rejected' limit 1`;
      expect(ev!.detail).to.equal('Suppressed');
    });

    it('skips and counts the contacts a rule matches in a broadcast', async () => {
      for (const email of ['one@blocked.test', 'two@fine.test', 'bounce-9@fine.test']) {
        await api.request('POST', '/contacts', { token: admin, body: { email } });
      }
      const seg = await api.request('POST', '/segments', {
        token: admin,
        body: {
          name: 'Some',
          filter: {
            any: [
              { field: 'email', op: 'ends_with', value: '@blocked.test' },
              { field: 'email', op: 'ends_with', value: '@fine.test' },
            ],
          },
        },
      });
      expect(seg.status, seg.text).to.equal(201);
      const b = await api.request('POST', '/broadcasts', {
        token: admin,
        body: {
          name: 'B',
          segment_id: seg.json.id,
          from: 'news@acme.test',
          subject: 'News',
          html: '<p>Hi</p>',
          send: true,
        },
      });
      expect(b.status, b.text).to.equal(201);
      await processBroadcastBatch(wdeps, { broadcastId: b.json.id as string, after: null });
      const got = await api.request('GET', `/broadcasts/${b.json.id}`, { token: admin });
      expect(got.json.counts).to.include({ sent: 1, skipped_suppressed: 2 });
    });
  });

  describe('CSV import and export', () => {
    it('adds 10,000 rules in one request and matches addresses against them exactly', async function () {
      this.timeout(60_000);
      const lines = ['pattern,reason'];
      for (let i = 0; i < 9000; i++) lines.push(`*@spam${i}.test,complaint`);
      for (let i = 0; i < 1000; i++) lines.push(`list${i}-*@*,manual`);
      const res = await importCsv(lines.join('\n'));
      expect(res.status, res.text).to.equal(200);
      expect(res.json).to.deep.include({ object: 'suppression_import', rows: 10_000, created: 10_000, failed: 0 });
      const probe = [
        'a@spam0.test',
        'b@spam8999.test',
        'c@spam9000.test',
        'list5-x@y.test',
        'list999-@z.test',
        'list1000-x@y.test',
        'lis@y.test',
        'nobody@else.test',
      ];
      const hit = await findSuppressedEmails(api.deps.sql, org.organization.id, null, probe);
      expect([...hit].sort()).to.deep.equal(['a@spam0.test', 'b@spam8999.test', 'list5-x@y.test', 'list999-@z.test']);
      // The look-up goes through the key index, not every rule.
      const keyed = await api.deps.sql`
        explain (format json) select 1 from suppressions s
        where s.org_id = ${org.organization.id} and s.pattern is not null
          and s.pattern_key = any(suppression_keys('list5-x@y.test')) and 'list5-x@y.test' like s.pattern_like`;
      expect(JSON.stringify(keyed)).to.contain('suppressions_pattern_key_idx');
    });

    it('reports rows it cannot add (line and why) and adds the others; a bare list needs no header', async () => {
      const csv = [
        'email,domain,reason',
        'x1@ok.test,,',
        'not an address,,',
        'x2@ok.test,nope.test,',
        'x3@ok.test,beta.test,hard_bounce',
        '*@?.test,,',
        'x4@ok.test,,weird',
      ].join('\n');
      const res = await importCsv(csv);
      expect(res.status, res.text).to.equal(200);
      expect(res.json).to.deep.include({ rows: 6, created: 2, existing: 0, failed: 4, errors_truncated: false });
      expect(res.json.errors.map((e: { line: number }) => e.line)).to.deep.equal([3, 4, 6, 7]);
      expect(res.json.errors[1].message).to.match(/nope\.test.*not a domain of this organization/);
      const again = await importCsv('x1@ok.test\nx5@ok.test\n*@bare.test\n');
      expect(again.json).to.deep.include({ rows: 3, created: 2, existing: 1, failed: 0 });
      const x3 = await api.request('GET', '/suppressions/x3@ok.test', { token: admin });
      expect(x3.json).to.include({ domain: 'beta.test', reason: 'hard_bounce' });
    });

    it('adds nothing from a file that is not valid CSV (422)', async () => {
      const res = await importCsv('email\nfirst@broken.test\n"second@broken.test\n');
      expect(res.status).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.match(/not valid CSV near line \d+: a quoted field is never closed/);
      expect((await api.request('GET', '/suppressions/first@broken.test', { token: admin })).status).to.equal(404);
    });

    it("gives a restricted key's rows its domain, and refuses rows without one", async () => {
      const r = await org.mint({ permission: 'SEND', domains: ['acme.test'] });
      const res = await importCsv('email\nr1@ok.test\n', '', r.token);
      expect(res.json).to.deep.include({ created: 0, failed: 1 });
      expect(res.json.errors[0].message).to.match(/needs a domain of this key's own/);
      const ok = await importCsv('email\nr1@ok.test\n', '?domain=acme.test', r.token);
      expect(ok.json).to.deep.include({ created: 1, failed: 0 });
    });

    it('exports the list as CSV that the import reads back', async () => {
      const res = await fetch(`${api.url}/api/v1/suppressions/export?reason=hard_bounce`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/csv/);
      const rows = parse(await res.text(), { columns: true }) as Record<string, string>[];
      expect(rows.map((r) => [r.email, r.domain, r.reason])).to.deep.equal([
        ['x3@ok.test', 'beta.test', 'hard_bounce'],
      ]);
      // Everything, read back by the import: every row is already there.
      const all = await fetch(`${api.url}/api/v1/suppressions/export`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      const text = await all.text();
      const count = (parse(text) as string[][]).length - 1;
      expect(count).to.be.greaterThan(10_000);
      const back = await importCsv(text);
      expect(back.json).to.deep.include({ rows: count, created: 0, existing: count, failed: 0 });
    });
  });
});
