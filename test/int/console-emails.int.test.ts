// The console's Emails pages through HTTP, as a browser without script uses them: the list and
// its filters and paging, the detail page (headers, recipients, why each waits, the event
// timeline with what the delivery worker recorded), the sandboxed HTML frame, the raw MIME, and
// the actions (cancel, retry now, remove suppression) with their confirmation, CSRF and roles.
import { expect } from 'chai';
import { insertTemplate } from '../../shared/db/templates.js';
import { newId } from '../../shared/ids.js';
import { ConsoleClient } from '../helpers/console.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

const XSS = '<script>alert(1)</script>';
const ESCAPED = '&#60;script&#62;alert(1)&#60;/script&#62;';

/** The ids of the rows of an Emails page, in order. */
function listed(text: string): string[] {
  return [...text.matchAll(/<tr data-email-id="(em_[0-9A-Z]+)"/g)].map((m) => m[1]!);
}

describe('console: emails', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let admin: ConsoleClient;
  let member: ConsoleClient;
  let live: { id: string; token: string };
  let testKey: { id: string; token: string };
  const ids = {} as Record<'receipt' | 'beta' | 'xss' | 'test' | 'scheduled', string>;

  async function send(token: string, body: Record<string, unknown>): Promise<string> {
    const res = await api.request('POST', '/emails', {
      token,
      body: { from: 'Acme <hello@acme.test>', subject: 'Hello', text: 'Hi there', ...body },
    });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  }

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await giveDkimKey(api.deps.sql, org.domains['acme.test']!.id);
    await api.deps.sql`update organizations set rate_limit_per_second = 10000, rate_limit_burst = 10000
      where id = ${org.organization.id}`;
    await api.deps.auth.invalidateOrg(org.organization.id);
    live = await org.mint({ permission: 'SEND', name: 'web app' });
    testKey = await org.mint({ permission: 'SEND', mode: 'test', name: 'ci' });
    // 55 plain messages first (oldest), then the ones the filters look for.
    const batch = Array.from({ length: 55 }, (_, i) => ({
      from: 'Acme <hello@acme.test>',
      to: [`bulk${i}@example.com`],
      subject: `Bulk number ${i}`,
      text: 'bulk',
    }));
    const res = await api.request('POST', '/emails/batch', { token: live.token, body: batch });
    expect(res.status, res.text).to.equal(200);
    ids.receipt = await send(live.token, {
      to: ['Bob Example <bob@example.com>', 'carol@example.com'],
      cc: ['dave@example.org'],
      subject: 'Your receipt for order 1234',
      tags: [{ name: 'order', value: '1234' }],
      html: '<p>Thanks! <img src="https://images.example.net/logo.png" alt="logo"></p>',
    });
    ids.beta = await send(live.token, { from: 'news@beta.test', to: ['bobby@example.com'], subject: 'Beta news' });
    ids.xss = await send(live.token, { to: ['eve@example.com'], subject: `Hi ${XSS}`, html: `<p>${XSS}</p>` });
    ids.test = await send(testKey.token, { to: ['tester@example.com'], subject: 'A test message' });
    ids.scheduled = await send(live.token, {
      to: ['later@example.com'],
      subject: 'Scheduled one',
      scheduled_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    admin = new ConsoleClient(api.url);
    expect((await admin.login(org.user.email, org.user.password)).status).to.equal(303);
    const added = await admin.post('/console/users', { email: `m-${Date.now()}@example.test`, role: 'member' });
    member = new ConsoleClient(api.url);
    const email = /(m-\d+@example\.test) can now sign in/.exec(added.text)![1]!;
    expect((await member.login(email, /data-password>([^<]+)</.exec(added.text)![1]!)).status).to.equal(303);
  });
  after(async () => {
    await api.close();
  });

  describe('list', () => {
    it('lists live messages newest first, 50 a page, with cursor links both ways', async () => {
      const first = await member.get('/console/emails');
      expect(first.status).to.equal(200);
      expect(first.text).to.contain('<h1>Emails</h1>');
      const page1 = listed(first.text);
      expect(page1).to.have.length(50);
      expect(page1[0]).to.equal(ids.scheduled);
      expect([...page1].sort().reverse()).to.deep.equal(page1);
      expect(page1).not.to.include(ids.test);
      const older = /href="(\/console\/emails\?after=em_[0-9A-Z]+)" rel="next"/.exec(first.text)![1]!;
      const second = await member.get(older.replace(/&amp;/g, '&'));
      const page2 = listed(second.text);
      expect(page2).to.have.length(9); // 55 + receipt, beta, xss, scheduled = 59
      expect(page2[0]! < page1.at(-1)!).to.equal(true);
      expect(second.text).not.to.contain('rel="next"');
      const newer = /href="(\/console\/emails\?before=em_[0-9A-Z]+)" rel="prev"/.exec(second.text)![1]!;
      expect(listed((await member.get(newer)).text)).to.deep.equal(page1);
    });

    it('shows a row with time, sender, first recipient (+N), subject, status badge and last event', async () => {
      const res = await member.get('/console/emails?tag=order%3D1234');
      const row = new RegExp(`<tr data-email-id="${ids.receipt}">[^]*?</tr>`).exec(res.text)![0];
      expect(row).to.contain('<time datetime=');
      expect(row).to.contain('<span title="Acme &#60;hello@acme.test&#62;">hello@acme.test</span>');
      expect(row).to.match(
        /<span title="Bob Example &#60;bob@example.com&#62;">bob@example.com<\/span>\s*<span class="muted">\+2<\/span>/,
      );
      expect(row).to.contain(`href="/console/emails/${ids.receipt}"`);
      expect(row).to.contain('Your receipt for order 1234');
      expect(row).to.match(/<span class="badge info" data-state="queued">queued<\/span>/);
    });

    it('switches to test mode, where test messages carry a badge', async () => {
      const res = await member.get('/console/emails?mode=test');
      expect(listed(res.text)).to.deep.equal([ids.test]);
      // The badge comes first: a long subject is cut short on a desktop, the badge never.
      expect(res.text).to.match(
        /<span class="badge info">test<\/span>\s*<a class="row-link"[^>]*\s*>A test message<\/a/,
      );
      expect(res.text).to.match(/<a href="\/console\/emails\?mode=test"\s+aria-current="page">Test<\/a>/);
    });

    it('filters by recipient (exact or prefix), sender, subject words, domain, tag, key, template, status and dates', async () => {
      const sql = api.deps.sql;
      const tpl = await insertTemplate(sql, {
        orgId: org.organization.id,
        slug: 'receipt',
        name: 'Receipt',
        subject: 'r',
        html: null,
        text: 't',
        from_address: null,
        variables: [],
      });
      await sql`update emails set template_id = ${tpl!.id}, template_slug = 'receipt', template_version = 3
        where id = ${ids.receipt}`;
      await sql`update emails set status = 'sent', last_event = 'email.delivery_delayed' where id = ${ids.beta}`;
      const today = new Date().toISOString().slice(0, 10);
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      const cases: [string, string[]][] = [
        ['to=bob%40example.com', [ids.receipt!]],
        ['to=BOB%40example.com', [ids.receipt!]],
        ['to=bob*', [ids.beta!, ids.receipt!]],
        ['to=dave%40example.org', [ids.receipt!]],
        // Every message to a recipient domain (To, Cc or Bcc), with or without a leading *.
        ['to=%40example.org', [ids.receipt!]],
        ['to=*%40EXAMPLE.org', [ids.receipt!]],
        ['to=%40example.com&subject=news', [ids.beta!]],
        ['to=%40nowhere.example', []],
        ['from=news%40beta.test', [ids.beta!]],
        ['from=Acme+%3Chello%40acme.test%3E&to=eve*', [ids.xss!]],
        ['subject=receipt+ORDER', [ids.receipt!]],
        ['subject=receipt+ord', []],
        ['subject=beta', [ids.beta!]],
        [`domain=${org.domains['beta.test']!.id}`, [ids.beta!]],
        ['tag=order%3D1234', [ids.receipt!]],
        ['tag=order%3D9999', []],
        [`template=${tpl!.id}`, [ids.receipt!]],
        ['state=delivery_delayed', [ids.beta!]],
        ['state=scheduled', [ids.scheduled!]],
        [`key=${testKey.id}&mode=test`, [ids.test!]],
        [`key=${testKey.id}`, []],
        [`since=${today}&to=bob*`, [ids.beta!, ids.receipt!]],
        [`until=${yesterday}`, []],
        ['to=bob*&subject=news&state=delivery_delayed', [ids.beta!]],
      ];
      for (const [q, want] of cases) {
        const res = await member.get(`/console/emails?${q}`);
        expect(res.status, q).to.equal(200);
        expect(listed(res.text), q).to.deep.equal(want);
        if (want.length === 0) expect(res.text, q).to.contain('No emails match these filters.');
      }
      // Every filter of the live key's mails: 59 of them, all of which it sent.
      const byKey = await member.get(`/console/emails?key=${live.id}`);
      expect(listed(byKey.text)).to.have.length(50);
    });

    it('reports a filter it cannot use and leaves it out', async () => {
      const res = await member.get('/console/emails?state=nope&tag=novalue&since=2024-13-45&domain=x');
      expect(res.status).to.equal(200);
      expect(res.text).to.contain('Status &#34;nope&#34; is unknown; left out');
      expect(res.text).to.contain('is not name=value');
      expect(res.text).to.contain('is not a date');
      expect(listed(res.text)).to.have.length(50);
    });

    it("counts today's test-mode emails on the overview apart from the live figures", async () => {
      const n = (
        await api.deps.sql`select count(*)::int as n from emails
        where org_id = ${org.organization.id} and mode = 'test'`
      )[0]!.n as number;
      expect(n).to.be.greaterThan(0);
      const res = await member.get('/console');
      expect(res.text).to.contain(`data-test-today="${n}"`);
      expect(res.text).to.contain('href="/console/emails?mode=test">See them</a>');
      const other = await seedOrg(api.deps.sql);
      const c = new ConsoleClient(api.url);
      await c.login(other.user.email, other.user.password);
      expect((await c.get('/console')).text).not.to.contain('data-test-today');
    });

    it('opens on the test list while the organization has sent test mail only', async () => {
      const other = await seedOrg(api.deps.sql, { domains: [{ name: 'only-test.test' }] });
      const key = await other.mint({ permission: 'SEND', mode: 'test' });
      const res = await api.request('POST', '/emails', {
        token: key.token,
        body: { from: 'hi@only-test.test', to: ['first@example.com'], subject: 'First try', text: 'x' },
      });
      expect(res.status, res.text).to.equal(200);
      const c = new ConsoleClient(api.url);
      await c.login(other.user.email, other.user.password);
      const page = await c.get('/console/emails');
      expect(listed(page.text)).to.deep.equal([res.json.id]);
      expect(page.text).to.match(/<a href="\/console\/emails\?mode=test"\s+aria-current="page">Test<\/a>/);
      // The live list stays one click away, and a search there stays live.
      expect(page.text).to.match(/<a href="\/console\/emails\?mode=live"\s*>Live<\/a>/);
      const liveList = await c.get('/console/emails?mode=live');
      expect(liveList.text).to.contain('No emails yet.');
      expect(liveList.text).to.contain('<input type="hidden" name="mode" value="live" />');
    });

    it('says what to do next when the organization has no messages', async () => {
      const other = await seedOrg(api.deps.sql);
      const c = new ConsoleClient(api.url);
      await c.login(other.user.email, other.user.password);
      const res = await c.get('/console/emails?mode=live');
      expect(res.text).to.contain('No emails yet.');
      // The demo sends with a test key: the empty live list points at the test list.
      expect(res.text).to.contain('href="/console/emails?mode=test">Test</a>');
      // Without a mode asked for, an organization with no live mail opens on its test list.
      expect((await c.get('/console/emails')).text).to.contain('No test emails yet.');
      // Another organization's message is not there, not even by its address.
      expect((await c.get(`/console/emails/${ids.receipt}`)).status).to.equal(404);
      expect(listed((await c.get('/console/emails?to=bob%40example.com')).text)).to.deep.equal([]);
    });
  });

  describe('detail', () => {
    it('shows headers, tags, key, template and version, and per recipient a timeline with reply, MX host, TLS and attempt', async () => {
      const sql = api.deps.sql;
      const [bob] = await sql<{ id: string }[]>`
        select id from email_recipients where email_id = ${ids.receipt} and email = 'bob@example.com'`;
      const retryAt = new Date(Date.now() + 3600_000);
      await sql`update emails set status = 'sent', last_event = 'email.delivery_delayed' where id = ${ids.receipt}`;
      await sql`update email_recipients set status = 'delivery_delayed', attempts = 1, next_attempt_at = ${retryAt},
          wait_reason = ${`retry at ${retryAt.toISOString()} after: 451 4.7.1 greylisted, try later`},
          last_response = '451 4.7.1 greylisted, try later'
        where id = ${bob!.id}`;
      await sql`insert into events (id, org_id, mode, type, email_id, recipient_id, recipient, detail, data, dedupe_key)
        values (${newId('evt')}, ${org.organization.id}, 'live', 'email.sent', ${ids.receipt}, ${bob!.id},
                'bob@example.com', null, '{}', ${`${bob!.id}:sent`}),
               (${newId('evt')}, ${org.organization.id}, 'live', 'email.delivery_delayed', ${ids.receipt}, ${bob!.id},
                'bob@example.com', 'TransientCommunicationFailure',
                ${sql.json({ attempt: 1, response: '451 4.7.1 greylisted, try later', mx_host: 'mx1.example.com', tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', policy: 'mta-sts', mode: 'enforce' } })},
                ${`${bob!.id}:delayed:1`})`;
      const res = await member.get(`/console/emails/${ids.receipt}`);
      expect(res.status).to.equal(200);
      const t = res.text;
      expect(t).to.contain('<h1>Your receipt for order 1234</h1>');
      for (const s of ['Bob Example &#60;bob@example.com&#62;, carol@example.com', 'dave@example.org', 'web app']) {
        expect(t).to.contain(s);
      }
      expect(t).to.contain(`<span class="tag">order=1234</span>`);
      expect(t).to.match(/receipt version 3/);
      expect(t).to.contain(`&lt;${ids.receipt}@acme.test&gt;`);
      const block = /<section class="recipient" data-recipient="bob@example.com"[^]*?<\/section>/.exec(t)![0];
      expect(block).to.contain('data-state="delivery_delayed">delayed<');
      expect(block).to.match(
        /<p class="wait" data-wait>Retry at <time datetime="[^"]+"[^]*?after <code>451 4\.7\.1 greylisted, try later<\/code>/,
      );
      expect(block).to.contain('attempt 1');
      expect(block).to.contain('MX host <code>mx1.example.com</code>');
      expect(block).to.contain('TLS TLSv1.3 (<code>TLS_AES_256_GCM_SHA384</code>)');
      expect(block).to.contain('<span data-tls-policy>MTA-STS enforce</span>');
      expect(block).to.contain('SMTP reply: <code>451 4.7.1 greylisted, try later</code>');
      expect(block).to.contain('TransientCommunicationFailure');
      // The member reads it all but gets no action.
      expect(block).not.to.contain('Retry now');
      expect((await admin.get(`/console/emails/${ids.receipt}`)).text).to.contain(
        `href="/console/emails/${ids.receipt}/recipients/${bob!.id}/retry"`,
      );
    });

    it("explains a hold by the pause with the organization reason, and a cap wait as tomorrow's cap", async () => {
      const sql = api.deps.sql;
      const [carol] = await sql<{ id: string }[]>`
        select id from email_recipients where email_id = ${ids.receipt} and email = 'carol@example.com'`;
      const [dave] = await sql<{ id: string }[]>`
        select id from email_recipients where email_id = ${ids.receipt} and email = 'dave@example.org'`;
      await sql`update email_recipients set wait_reason = 'sending paused' where id = ${carol!.id}`;
      await sql`update email_recipients set wait_reason = 'over daily cap until 2030-01-02T00:00:00.000Z' where id = ${dave!.id}`;
      await sql`update organizations set sending_paused = true, sending_paused_reason = 'complaint rate 0.4 % > 0.3 %'
        where id = ${org.organization.id}`;
      try {
        const t = (await member.get(`/console/emails/${ids.receipt}`)).text;
        expect(t).to.contain('Held: organization paused: complaint rate 0.4 % &#62; 0.3 %.');
        expect(t).to.match(/Waiting for tomorrow's cap: [^]*?<time datetime="2030-01-02T00:00:00.000Z"/);
      } finally {
        await sql`update organizations set sending_paused = false, sending_paused_reason = null where id = ${org.organization.id}`;
      }
    });

    it('frames the HTML part in a sandbox: no script, no remote image until asked, framed by the console only', async () => {
      const page = await member.get(`/console/emails/${ids.receipt}`);
      const frame = /<iframe[^>]*>/.exec(page.text)![0];
      expect(frame).to.contain('sandbox=""');
      expect(frame).not.to.contain('allow-scripts');
      expect(frame).to.contain(`src="/console/emails/${ids.receipt}/html"`);
      expect(page.headers['content-security-policy']).to.contain("frame-src 'self'");
      expect(page.text).to.contain(`href="/console/emails/${ids.receipt}?images=1#content"`);
      const doc = await member.get(`/console/emails/${ids.receipt}/html`);
      expect(doc.status).to.equal(200);
      expect(doc.text).to.contain('https://images.example.net/logo.png');
      const csp = String(doc.headers['content-security-policy']);
      expect(csp).to.contain('img-src data:;');
      expect(csp).to.match(/; sandbox$/);
      expect(csp).to.contain("frame-ancestors 'self'");
      expect(csp).not.to.contain('script-src');
      expect(doc.headers['x-frame-options']).to.equal('SAMEORIGIN');
      const withImages = await member.get(`/console/emails/${ids.receipt}/html?images=1`);
      expect(String(withImages.headers['content-security-policy'])).to.contain('img-src data: https: http:;');
      const imagesPage = await member.get(`/console/emails/${ids.receipt}?images=1`);
      expect(imagesPage.text).to.contain(`src="/console/emails/${ids.receipt}/html?images=1"`);
      expect(page.text).to.contain('<pre data-text-part>Hi there</pre>');
    });

    it('serves the raw MIME, inline and as a download', async () => {
      const view = await member.get(`/console/emails/${ids.receipt}/raw`);
      expect(view.status).to.equal(200);
      expect(view.headers['content-type']).to.equal('text/plain; charset=utf-8');
      expect(view.text).to.contain('Subject: Your receipt for order 1234');
      expect(view.text).to.contain('DKIM-Signature:');
      const dl = await member.get(`/console/emails/${ids.receipt}/raw?download=1`);
      expect(dl.headers['content-type']).to.equal('message/rfc822');
      expect(dl.headers['content-disposition']).to.equal(`attachment; filename="${ids.receipt}.eml"`);
      expect((await member.get('/console/emails/em_nope/raw')).status).to.equal(404);
    });
  });

  describe('actions', () => {
    it('cancels a scheduled email after a confirmation, for admins only, with the CSRF token', async () => {
      const detail = await admin.get(`/console/emails/${ids.scheduled}`);
      expect(detail.text).to.contain(`href="/console/emails/${ids.scheduled}/cancel"`);
      expect((await member.get(`/console/emails/${ids.scheduled}`)).text).not.to.contain('/cancel"');
      const confirm = await admin.get(`/console/emails/${ids.scheduled}/cancel`);
      expect(confirm.status).to.equal(200);
      expect(confirm.text).to.contain('Cancel this email?');
      expect(confirm.text).to.match(/<form method="post" action="\/console\/emails\/em_[0-9A-Z]+\/cancel"/);
      const status = async () =>
        (await api.deps.sql<{ status: string }[]>`select status from emails where id = ${ids.scheduled}`)[0]!.status;
      expect(await status()).to.equal('scheduled');
      expect((await member.post(`/console/emails/${ids.scheduled}/cancel`)).status).to.equal(403);
      expect((await admin.post(`/console/emails/${ids.scheduled}/cancel`, {}, { csrf: false })).status).to.equal(403);
      expect(await status()).to.equal('scheduled');
      const done = await admin.post(`/console/emails/${ids.scheduled}/cancel`);
      expect(done.status).to.equal(303);
      expect(done.location).to.equal(`/console/emails/${ids.scheduled}`);
      expect(await status()).to.equal('canceled');
      expect(await api.deps.queues.delivery.getJob(ids.scheduled!)).to.equal(undefined);
      const again = await admin.post(`/console/emails/${ids.scheduled}/cancel`);
      expect(again.status).to.equal(409);
      expect(again.text).to.contain('data-error="invalid_state"');
    });

    it('retries a deferred recipient now: due now, and its delayed job moved to now', async () => {
      const sql = api.deps.sql;
      const [bob] = await sql<{ id: string; next_attempt_at: Date }[]>`
        select id, next_attempt_at from email_recipients where email_id = ${ids.receipt} and email = 'bob@example.com'`;
      const jobId = `${ids.receipt}-${bob!.next_attempt_at.getTime()}`;
      const queue = api.deps.queues.delivery;
      await queue.add(
        'email',
        { emailId: ids.receipt! },
        { jobId, delay: bob!.next_attempt_at.getTime() - Date.now() },
      );
      expect(await (await queue.getJob(jobId))!.getState()).to.equal('delayed');
      const path = `/console/emails/${ids.receipt}/recipients/${bob!.id}/retry`;
      expect((await admin.get(path)).text).to.contain('Retry this recipient now?');
      expect((await member.post(path)).status).to.equal(403);
      const res = await admin.post(path);
      expect(res.status).to.equal(303);
      expect(await (await queue.getJob(jobId))!.getState()).to.equal('waiting');
      const [after] = await sql<{ next_attempt_at: Date; wait_reason: string }[]>`
        select next_attempt_at, wait_reason from email_recipients where id = ${bob!.id}`;
      expect(after!.next_attempt_at.getTime()).to.be.at.most(Date.now() + 1000);
      expect(after!.wait_reason).to.match(/^retry requested in the console/);
      expect((await admin.get(`/console/emails/${ids.receipt}`)).text).to.contain('Retry requested in the console');
      // Not deferred any more: refused with the reason.
      await sql`update email_recipients set status = 'delivered' where id = ${bob!.id}`;
      const late = await admin.post(path);
      expect(late.status).to.equal(409);
      expect(late.text).to.contain('only a deferred recipient can be retried');
    });

    it("removes a recipient's suppression after a confirmation", async () => {
      const sql = api.deps.sql;
      const [eve] = await sql<{ id: string }[]>`select id from email_recipients where email_id = ${ids.xss}`;
      await sql`insert into suppressions (id, org_id, email, domain_id, reason)
        values (${newId('sup')}, ${org.organization.id}, 'eve@example.com', null, 'hard_bounce')`;
      const page = await admin.get(`/console/emails/${ids.xss}`);
      expect(page.text).to.contain('suppressed (hard_bounce)');
      const path = `/console/emails/${ids.xss}/recipients/${eve!.id}/unsuppress`;
      expect(page.text).to.contain(`href="${path}"`);
      expect((await admin.get(path)).text).to.contain('for the whole organization (hard bounce)');
      expect((await member.post(path)).status).to.equal(403);
      expect((await admin.post(path)).status).to.equal(303);
      const left =
        await sql`select 1 from suppressions where org_id = ${org.organization.id} and email = 'eve@example.com'`;
      expect(left).to.have.length(0);
      expect((await admin.get(path)).status).to.equal(404);
    });
  });

  describe('the filtered list', () => {
    it('exports the filtered list as CSV, every match and only those', async () => {
      const res = await member.get('/console/emails/export?to=bulk1*');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.match(/^text\/csv/);
      expect(res.headers['content-disposition']).to.match(
        /^attachment; filename="emails-live-\d{4}-\d{2}-\d{2}\.csv"$/,
      );
      const lines = res.text.trimEnd().split('\r\n');
      expect(lines[0]).to.equal(
        'id,created_at,mode,from,first_recipient,recipients,subject,stream,status,last_event_at',
      );
      const recipients = lines.slice(1).map((l) => l.split(',')[4]);
      // bulk1 and bulk10 … bulk19
      expect(recipients).to.have.length(11);
      expect(recipients.every((r) => /^bulk1\d?@example\.com$/.test(r!))).to.equal(true);
      expect(lines[1]).to.match(/^em_\w+,\d{4}-\d{2}-\d{2}T[\d:.]+Z,live,Acme <hello@acme\.test>,/);
      // The list links to it with its filters.
      expect((await member.get('/console/emails?to=bulk1*')).text).to.contain(
        'href="/console/emails/export?to=bulk1*"',
      );
    });

    it('retries, cancels and unsuppresses every match of a filter, after a confirmation naming how many', async () => {
      const sql = api.deps.sql;
      const count = (text: string) => Number(/data-bulk-count="(\d+)"/.exec(text)?.[1]);
      // Two deferred recipients, two scheduled messages, two suppressions.
      await sql`update email_recipients set status = 'delivery_delayed', attempts = 1,
          next_attempt_at = now() + interval '1 hour', wait_reason = 'retry at later after: 451 busy'
        where org_id = ${org.organization.id} and email in ('bulk3@example.com', 'bulk4@example.com')`;
      const later = new Date(Date.now() + 7200_000).toISOString();
      const s1 = await send(live.token, { to: ['one@bulk.test'], subject: 'Later 1', scheduled_at: later });
      const s2 = await send(live.token, { to: ['two@bulk.test'], subject: 'Later 2', scheduled_at: later });
      for (const email of ['bulk5@example.com', 'bulk6@example.com']) {
        await sql`insert into suppressions (id, org_id, email, domain_id, reason)
          values (${newId('sup')}, ${org.organization.id}, ${email}, null, 'manual')`;
      }
      expect((await member.get('/console/emails/bulk/retry?to=%40example.com')).status).to.equal(403);
      expect((await member.get('/console/emails?to=%40example.com')).text).not.to.contain('/console/emails/bulk/');

      const deferred = await sql<
        { id: string }[]
      >`select r.id from email_recipients r join emails e on e.id = r.email_id
        where r.org_id = ${org.organization.id} and e.mode = 'live' and r.status = 'delivery_delayed'
          and r.attempt_started_at is null and r.email like '%@example.com'`;
      expect(deferred.length).to.be.at.least(2);
      const retry = await admin.get('/console/emails/bulk/retry?to=%40example.com');
      expect(count(retry.text)).to.equal(deferred.length);
      expect(retry.text).to.contain('<input type="hidden" name="to" value="@example.com"');
      const retried = await admin.post('/console/emails/bulk/retry', { to: '@example.com' });
      expect(retried.status).to.equal(303);
      expect(retried.location).to.contain(`done=${deferred.length}+recipients+retried+now.`);
      const waits = await sql<{ wait_reason: string }[]>`select wait_reason from email_recipients
        where org_id = ${org.organization.id} and email in ('bulk3@example.com', 'bulk4@example.com')`;
      expect(waits.map((w) => w.wait_reason.startsWith('retry requested in the console'))).to.deep.equal([true, true]);

      const cancel = await admin.get('/console/emails/bulk/cancel?to=%40bulk.test');
      expect(count(cancel.text)).to.equal(2);
      expect((await admin.post('/console/emails/bulk/cancel', { to: '@bulk.test' }, { csrf: false })).status).to.equal(
        403,
      );
      expect((await admin.post('/console/emails/bulk/cancel', { to: '@bulk.test' })).status).to.equal(303);
      const statuses = await sql<{ status: string }[]>`select status from emails where id in (${s1}, ${s2})`;
      expect(statuses.map((r) => r.status)).to.deep.equal(['canceled', 'canceled']);
      const audited = await sql<{ n: number }[]>`select count(*)::int as n from audit_log
        where action = 'email.canceled' and target_id in (${s1}, ${s2}) and detail->>'bulk' = 'true'`;
      expect(audited[0]!.n).to.equal(2);
      // Nothing left to cancel: said so, without a form.
      const none = await admin.get('/console/emails/bulk/cancel?to=%40bulk.test');
      expect(none.text)
        .to.contain('<h1>Nothing to do</h1>')
        .and.not.to.contain('method="post" action="/console/emails/bulk');

      const un = await admin.get('/console/emails/bulk/unsuppress?to=%40example.com');
      expect(count(un.text)).to.equal(2);
      expect((await admin.post('/console/emails/bulk/unsuppress', { to: '@example.com' })).status).to.equal(303);
      const left = await sql`select 1 from suppressions where org_id = ${org.organization.id}
        and email in ('bulk5@example.com', 'bulk6@example.com')`;
      expect(left).to.have.length(0);
    });
  });

  it('renders a subject with <script> as text on the list, the detail and the confirmation pages', async () => {
    const [eve] = await api.deps.sql<{ id: string }[]>`select id from email_recipients where email_id = ${ids.xss}`;
    await api.deps.sql`update email_recipients set status = 'delivery_delayed', attempts = 1,
        wait_reason = ${`retry at 2030-01-01T00:00:00.000Z after: 451 ${XSS}`}, last_response = ${XSS}
      where id = ${eve!.id}`;
    const pages = [
      '/console/emails',
      `/console/emails?subject=${encodeURIComponent(XSS)}`,
      `/console/emails?to=${encodeURIComponent(XSS)}`,
      `/console/emails/${ids.xss}`,
      `/console/emails/${ids.xss}/recipients/${eve!.id}/retry`,
    ];
    for (const path of pages) {
      const res = await admin.get(path);
      expect(res.status, path).to.equal(200);
      const withoutOwnScript = res.text.replace('<script src="/console/assets/console.js" defer></script>', '');
      expect(withoutOwnScript.toLowerCase(), path).not.to.contain('<script');
    }
    expect((await admin.get('/console/emails')).text).to.contain(`Hi ${ESCAPED}`);
  });
});
