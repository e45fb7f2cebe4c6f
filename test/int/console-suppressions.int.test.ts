// The console's Suppressions page through HTTP: search (exact and prefix, reason, scope), add
// and remove (admins, confirmed, CSRF), the CSV export and the CSV import (multipart upload; one
// bad line refuses the whole file and names the line; an export imports back).
import { expect } from 'chai';
import { newId } from '../../shared/ids.js';
import { ConsoleClient } from '../helpers/console.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

function shown(text: string): string[] {
  return [...text.matchAll(/<tr data-suppression="([^"]+)"/g)].map((m) => m[1]!);
}

describe('console: suppressions', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let admin: ConsoleClient;
  let member: ConsoleClient;

  const count = async () =>
    (
      await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from suppressions where org_id = ${org.organization.id}`
    )[0]!.n;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const sql = api.deps.sql;
    const rows: [string, string | null, string][] = [
      ['bounced@example.com', null, 'hard_bounce'],
      ['angry@example.com', null, 'complaint'],
      ['bob@example.com', org.domains['acme.test']!.id, 'unsubscribe'],
      ['bobby@example.com', null, 'manual'],
    ];
    for (const [email, domainId, reason] of rows) {
      await sql`insert into suppressions (id, org_id, email, domain_id, reason)
        values (${newId('sup')}, ${org.organization.id}, ${email}, ${domainId}, ${reason})`;
    }
    admin = new ConsoleClient(api.url);
    await admin.login(org.user.email, org.user.password);
    const added = await admin.post('/console/users', { email: `m-${Date.now()}@example.test`, role: 'member' });
    member = new ConsoleClient(api.url);
    await member.login(
      /(m-\d+@example\.test) can now sign in/.exec(added.text)![1]!,
      /data-password>([^<]+)</.exec(added.text)![1]!,
    );
  });
  after(async () => {
    await api.close();
  });

  it('searches by exact address, prefix, reason and scope', async () => {
    const all = await member.get('/console/suppressions');
    expect(all.status).to.equal(200);
    expect(all.text).to.contain('<h1>Suppressions</h1>');
    expect(shown(all.text)).to.have.members([
      'bounced@example.com',
      'angry@example.com',
      'bob@example.com',
      'bobby@example.com',
    ]);
    const cases: [string, string[]][] = [
      ['q=bob%40example.com', ['bob@example.com']],
      ['q=BOB*', ['bobby@example.com', 'bob@example.com']],
      ['reason=complaint', ['angry@example.com']],
      [`domain=${org.domains['acme.test']!.id}`, ['bob@example.com']],
      ['domain=org&q=bob*', ['bobby@example.com']],
      ['q=nobody%40example.com', []],
    ];
    for (const [q, want] of cases) {
      const res = await member.get(`/console/suppressions?${q}`);
      expect(shown(res.text), q).to.deep.equal(want);
    }
    expect((await member.get('/console/suppressions?q=zzz')).text).to.contain('No suppression matches.');
    // Members read but change nothing: no forms, no remove links, and the routes refuse them.
    expect(all.text).not.to.contain('Add suppression');
    expect(all.text).not.to.contain('/remove"');
    expect((await member.post('/console/suppressions', { email: 'x@example.com' })).status).to.equal(403);
  });

  it('adds an address (org-wide or for a domain) and removes it after a confirmation', async () => {
    const page = await admin.get('/console/suppressions');
    expect(page.text).to.contain('<label for="f-email">Address to suppress</label>');
    const res = await admin.post('/console/suppressions', { email: 'New@Example.com', domain: '' });
    expect(res.status).to.equal(303);
    expect(decodeURIComponent(res.location!)).to.contain('added=new@example.com');
    const bad = await admin.post('/console/suppressions', { email: 'not an address' });
    expect(bad.status).to.equal(422);
    const rule = await admin.post('/console/suppressions', { email: '*@Spam.example', domain: '' });
    expect(rule.status).to.equal(303);
    expect(await api.deps.sql`select email, pattern from suppressions where pattern is not null`).to.deep.equal([
      { email: null, pattern: '*@spam.example' },
    ]);
    const noCsrf = await admin.post('/console/suppressions', { email: 'y@example.com' }, { csrf: false });
    expect(noCsrf.status).to.equal(403);
    const scoped = await admin.post('/console/suppressions', {
      email: 'scoped@example.com',
      domain: org.domains['acme.test']!.id,
    });
    expect(scoped.status).to.equal(303);
    const [row] = await api.deps.sql<{ id: string; domain_id: string | null; reason: string }[]>`
      select id, domain_id, reason from suppressions where email = 'new@example.com'`;
    expect(row).to.deep.include({ domain_id: null, reason: 'manual' });
    const list = await admin.get('/console/suppressions?q=new%40example.com');
    expect(list.text).to.contain(`href="/console/suppressions/${row!.id}/remove"`);
    const confirm = await admin.get(`/console/suppressions/${row!.id}/remove`);
    expect(confirm.text).to.contain('Remove this suppression?');
    expect((await member.post(`/console/suppressions/${row!.id}/remove`)).status).to.equal(403);
    const removed = await admin.post(`/console/suppressions/${row!.id}/remove`);
    expect(removed.status).to.equal(303);
    expect(await api.deps.sql`select 1 from suppressions where id = ${row!.id}`).to.have.length(0);
    expect((await admin.post(`/console/suppressions/${row!.id}/remove`)).status).to.equal(404);
  });

  it('exports the list as CSV, with a header and one row an address', async () => {
    const res = await member.get('/console/suppressions/export');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/csv; charset=utf-8');
    expect(String(res.headers['content-disposition'])).to.match(
      /^attachment; filename="suppressions-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    const lines = res.text.trim().split(/\r?\n/);
    expect(lines[0]).to.equal('email,pattern,domain,reason,source_email_id,created_at,id');
    expect(lines).to.have.length((await count()) + 1);
    expect(lines).to.include.members([
      lines.find((l) => l.startsWith('bob@example.com,,acme.test,unsubscribe,,'))!,
      lines.find((l) => l.startsWith('bounced@example.com,,,hard_bounce,,'))!,
    ]);
  });

  it('refuses a whole import that has a bad line, naming every bad line', async () => {
    const before = await count();
    const csv = [
      'email,domain,reason',
      'good1@example.com,,',
      'not-an-address,,',
      'good2@example.com,acme.test,unsubscribe',
      'good3@example.com,unknown.test,',
      'good4@example.com,,spam',
      '"quoted@example.com",,manual',
    ].join('\n');
    const res = await admin.postMultipart(
      '/console/suppressions/import',
      {},
      {
        field: 'file',
        filename: 'list.csv',
        content: csv,
      },
    );
    expect(res.status).to.equal(422);
    expect(res.text).to.contain('Nothing was imported');
    const errors = [...res.text.matchAll(/<li>([^<]+)<\/li>/g)].map((m) => m[1]!);
    expect(errors).to.deep.equal([
      'line 3: &#34;not-an-address&#34; is not a valid address: it is not an email address (missing local part or @)',
      'line 5: &#34;good3@example.com&#34; names the domain &#34;unknown.test&#34;, which is not a domain of this organization',
      'line 6: &#34;good4@example.com&#34; has the reason &#34;spam&#34;; use one of hard_bounce, complaint, unsubscribe, manual',
    ]);
    expect(await count()).to.equal(before);
    const broken = await admin.postMultipart(
      '/console/suppressions/import',
      {},
      {
        field: 'file',
        filename: 'broken.csv',
        content: 'email\n"unterminated@example.com\n',
      },
    );
    expect(broken.status).to.equal(422);
    expect(broken.text).to.match(/<li>line \d+: /);
    const noHeader = await admin.postMultipart(
      '/console/suppressions/import',
      {},
      {
        field: 'file',
        filename: 'x.csv',
        content: 'name\nx@example.com\n',
      },
    );
    // A first row that names no address column is read as data: "name" is no address, so nothing is imported.
    expect(noHeader.status).to.equal(422);
    expect(noHeader.text).to.contain('line 1: &#34;name&#34; is not a valid address');
    expect(await count()).to.equal(before);
  });

  it('imports a good file in one go (rows already there kept), and an export imports back', async () => {
    const before = await count();
    const csv = '\ufeffEmail,Domain\r\nfresh1@example.com,\r\nfresh2@example.com,acme.test\r\nbounced@example.com,\r\n';
    const res = await admin.postMultipart(
      '/console/suppressions/import',
      {},
      {
        field: 'file',
        filename: 'list.csv',
        content: csv,
      },
    );
    expect(res.status).to.equal(303);
    expect(res.location).to.equal('/console/suppressions?imported=2&skipped=1');
    expect(await count()).to.equal(before + 2);
    expect((await admin.get(res.location!)).text).to.contain('Imported 2 suppressions; 1 already there.');
    // An export read into another organization with a domain of the same name comes back whole.
    const exported = (await admin.get('/console/suppressions/export')).text;
    const other = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test', verified: false }] });
    const c = new ConsoleClient(api.url);
    await c.login(other.user.email, other.user.password);
    await c.get('/console/suppressions');
    const back = await c.postMultipart(
      '/console/suppressions/import',
      {},
      {
        field: 'file',
        filename: 'export.csv',
        content: exported,
      },
    );
    expect(back.status, back.text).to.equal(303);
    const theirs = await api.deps.sql<{ email: string; reason: string; domain: string | null }[]>`
      select s.email, s.reason, d.name as domain from suppressions s left join domains d on d.id = s.domain_id
      where s.org_id = ${other.organization.id} order by s.email`;
    expect(theirs).to.have.length(await count());
    expect(theirs.find((r) => r.email === 'bob@example.com')).to.deep.equal({
      email: 'bob@example.com',
      reason: 'unsubscribe',
      domain: 'acme.test',
    });
  });

  it('needs the CSRF token and an admin for an import, and a file', async () => {
    const file = { field: 'file', filename: 'a.csv', content: 'email\nz@example.com\n' };
    expect((await admin.postMultipart('/console/suppressions/import', {}, file, { csrf: false })).status).to.equal(403);
    expect((await member.postMultipart('/console/suppressions/import', {}, file)).status).to.equal(403);
    await admin.get('/console/suppressions');
    const empty = await admin.postMultipart('/console/suppressions/import', {}, { ...file, content: '' });
    expect(empty.status).to.equal(422);
    expect(await api.deps.sql`select 1 from suppressions where email = 'z@example.com'`).to.have.length(0);
  });

  it('shows addresses as text', async () => {
    await api.deps.sql`insert into suppressions (id, org_id, email, domain_id, reason)
      values (${newId('sup')}, ${org.organization.id}, ${'x<script>alert(1)</script>@example.com'}, null, 'manual')`;
    const res = await admin.get('/console/suppressions?q=x*');
    expect(res.text).to.contain('x&#60;script&#62;alert(1)&#60;/script&#62;@example.com');
    const withoutOwn = res.text.replace('<script src="/console/assets/console.js" defer></script>', '');
    expect(withoutOwn.toLowerCase()).not.to.contain('<script');
  });
});
