// The console in a real browser (Debian's Chromium through playwright-core): an operator signs
// in, finds an email by recipient, reads its timeline, retries a greylisted recipient (a real
// delivery worker then delivers it to a scripted MX), cancels a scheduled email, removes a
// suppression and imports a CSV with a bad line. Every page is checked with axe-core (0 serious
// or critical violations) at 1280 px and 390 px, must not scroll sideways, and is written as a
// screenshot under test-output/console/. Without JavaScript the pages still work.
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { applyDeltas, type Delta } from '../../shared/db/metrics.js';
import { startDeliveryWorker, type DeliveryWorkers } from '../../workers/delivery.js';
import type { WorkerDeps } from '../../workers/deps.js';
import { checkPage, launchBrowser, screenshot, type TestBrowser } from '../helpers/browser.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { giveDkimKey } from '../helpers/mail-seed.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { workerDepsFor } from '../helpers/workers.js';
import { waitFor } from '../helpers/wait.js';

describe('console in a browser', function () {
  // Under a loaded machine the axe sweep (some 70 page loads) takes minutes.
  this.timeout(420_000);
  let api: TestApi;
  let dns: TestDns;
  let sink: Sink;
  let deps: WorkerDeps;
  let worker: DeliveryWorkers;
  let org: SeededOrg;
  let browser: TestBrowser;
  const ids: Record<'grey' | 'scheduled' | 'xss' | 'key', string> = { grey: '', scheduled: '', xss: '', key: '' };
  const errors: string[] = [];
  /** CSP refusals inside the message frame: expected (remote images are off there). */
  const frameRefusals: string[] = [];

  async function send(token: string, body: Record<string, unknown>): Promise<string> {
    const res = await api.request('POST', '/emails', {
      token,
      body: { from: 'Acme <hello@acme.test>', text: 'Hello there', ...body },
    });
    expect(res.status, res.text).to.equal(200);
    return res.json.id as string;
  }

  before(async () => {
    dns = await startDns();
    dns.mx('dest.test', [{ exchange: '127.0.0.1', priority: 10 }]);
    // The first attempt to grey@ is greylisted; everything else is accepted.
    sink = await startSink((rcpt, n) =>
      rcpt.startsWith('grey') && n === 1 ? { code: 451, message: '4.7.1 greylisted, try again later' } : null,
    );
    api = await startApi({ env: { DNS_SERVERS: dns.server } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await giveDkimKey(api.deps.sql, org.domains['acme.test']!.id);
    await api.deps
      .sql`update domains set verified_at = now() - interval '90 days' where id = ${org.domains['acme.test']!.id}`;
    // An hour between retries: only "Retry now" can deliver the greylisted recipient during the test.
    deps = workerDepsFor(api, {
      OUTBOUND_PORT: String(sink.port),
      DNS_SERVERS: dns.server,
      DELIVERY_RETRY_SECONDS: '3600',
    });
    worker = await startDeliveryWorker(deps, { sweepEverySeconds: 0 });
    const key = await org.mint({ permission: 'SEND', name: 'web app' });
    ids.key = key.id;
    const test = await org.mint({ permission: 'SEND', mode: 'test', name: 'dev' });
    ids.grey = await send(key.token, {
      to: ['grey@dest.test'],
      subject: 'Greylisted hello',
      html: '<h1 style="font-family:sans-serif">Hello</h1><p>Your order shipped. <img src="https://cdn.example.net/x.png" alt="banner"></p>',
      tags: [{ name: 'order', value: '42' }],
    });
    ids.scheduled = await send(key.token, {
      to: ['later@dest.test'],
      subject: 'Tomorrow, maybe',
      scheduled_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    ids.xss = await send(key.token, { to: ['ok@dest.test'], subject: 'Hi <script>alert(1)</script>' });
    await send(test.token, { to: ['someone@dest.test'], subject: 'Only a test' });
    await send(test.token, {
      to: ['someone.with.a.long.address@dest.test'],
      subject: 'Hello from Tern over SMTP, with a subject long enough to be cut short in the list',
    });
    await api.deps.sql`insert into suppressions (id, org_id, email, reason)
      values ('sup_01JAAAAAAAAAAAAAAAAAAAAAAA', ${org.organization.id}, 'blocked@dest.test', 'hard_bounce')`;
    await waitFor(
      'the greylisted attempt',
      async () =>
        (
          await api.deps
            .sql`select 1 from email_recipients where email = 'grey@dest.test' and status = 'delivery_delayed'`
        ).length === 1,
    );
    await waitFor(
      'the plain delivery',
      async () =>
        (await api.deps.sql`select 1 from email_recipients where email = 'ok@dest.test' and status = 'delivered'`)
          .length,
    );
    // Thirty days of history for the charts (the rollups as the metrics worker writes them), and
    // an alert rule whose threshold the rate chart shows.
    const acme = org.domains['acme.test']!.id;
    const history: Delta[] = [];
    for (let d = 0; d < 30; d++) {
      const day = new Date(Date.now() - d * 86_400_000).toISOString().slice(0, 10);
      const base = 400 + ((d * 37) % 150) + (d % 7 < 2 ? -250 : 0);
      for (const [provider, share, stream] of [
        ['gmail', 0.5, 'transactional'],
        ['outlook', 0.3, 'broadcast'],
        ['yahoo', 0.2, 'transactional'],
      ] as const) {
        const sent = Math.round(base * share);
        const bounced = Math.round(sent * (0.01 + ((d * 13) % 5) / 200));
        history.push({
          orgId: org.organization.id,
          day,
          domainId: acme,
          provider,
          keyId: key.id,
          templateId: '',
          kind: '',
          stream,
          counts: {
            sent,
            delivered: sent - bounced - (d === 0 ? 5 : 0),
            bounced_hard: Math.ceil(bounced / 2),
            bounced_soft: Math.floor(bounced / 2),
            complained: d % 9 === 0 ? 1 : 0,
            opened: Math.round(sent * 0.3),
          },
        });
      }
    }
    await applyDeltas(api.deps.sql, history);
    await api.deps.sql`update organizations set alert_rules = ${api.deps.sql.json([
      { metric: 'bounce', threshold: 5, min_volume: 100, window_days: 1, action: 'pause' },
    ])} where id = ${org.organization.id}`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await worker?.close();
    await deps?.close();
    await api?.close();
    await sink?.close();
    await dns?.close();
  });

  /** Pages of a context report their script errors and CSP refusals into `errors`. */
  function watch(context: BrowserContext): void {
    context.on('page', (p) => {
      p.on('pageerror', (e) => errors.push(e.message));
      p.on('console', (m) => {
        if (!/Content Security Policy|Refused to/.test(m.text())) return;
        if (/\/console\/emails\/em_\w+\/html/.test(m.location().url)) frameRefusals.push(m.text());
        else errors.push(m.text());
      });
    });
  }

  async function signIn(context: BrowserContext): Promise<Page> {
    watch(context);
    const page = await context.newPage();
    await page.goto(`${api.url}/console/login`);
    await page.getByLabel('Email').fill(org.user.email);
    await page.getByLabel('Password').fill(org.user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${api.url}/console`);
    return page;
  }

  const check = checkPage;

  const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });

  it('finds an email by recipient, reads its timeline and retries the deferred recipient', async () => {
    const context = await browser.context();
    const page = await signIn(context);
    await nav(page).getByRole('link', { name: 'Emails' }).click();
    await page.getByLabel('Recipient').fill('grey@dest.test');
    await page.getByRole('button', { name: 'Filter' }).click();
    const rows = page.getByRole('region', { name: 'Emails' }).locator('tbody tr');
    expect(await rows.count()).to.equal(1);
    await page.getByRole('link', { name: 'Greylisted hello' }).click();
    await page.getByRole('heading', { level: 1, name: 'Greylisted hello' }).waitFor();

    const grey = page.getByRole('region', { name: 'Recipient grey@dest.test' });
    expect(await grey.locator('[data-state="delivery_delayed"]').first().innerText()).to.equal('delayed');
    const wait = await grey.locator('[data-wait]').innerText();
    expect(wait).to.match(/^Retry at .+ after 451 4\.7\.1 greylisted, try again later$/);
    // The time is the viewer's (Paris), UTC on hover.
    const time = grey.locator('[data-wait] time');
    expect(await time.getAttribute('title')).to.match(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC \(shown in Central European .+\)$/,
    );
    expect(await time.innerText()).not.to.match(/UTC$/);
    const timeline = await grey.locator('.timeline').innerText();
    for (const s of ['sent', 'delayed', 'attempt 1', 'MX host 127.0.0.1', 'SMTP reply: 451 4.7.1 greylisted']) {
      expect(timeline).to.contain(s);
    }
    // The attempt's TLS facts: the sink offers STARTTLS with no policy on its domain.
    expect(timeline).to.match(/TLS TLSv1\.[23] \(\w+\) · opportunistic/);
    // The HTML part: sandboxed, remote images off until asked.
    const frame = page.frameLocator('iframe.message-frame');
    await frame.getByRole('heading', { name: 'Hello' }).waitFor();
    await waitFor('the refusal', async () => frameRefusals.some((m) => m.includes('https://cdn.example.net/x.png')));
    const loaded = await frame
      .locator('img')
      .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth);
    expect(loaded).to.equal(0);

    await grey.getByRole('link', { name: 'Retry now' }).click();
    await page.getByRole('heading', { level: 1, name: 'Retry this recipient now?' }).waitFor();
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.waitForURL(`${api.url}/console/emails/${ids.grey}`);
    await waitFor('the retried recipient to be delivered', async () => {
      await page.reload();
      return (await grey.locator('.recipient-head [data-state]').first().getAttribute('data-state')) === 'delivered';
    });
    expect(await grey.locator('.timeline').innerText()).to.match(/delivered[^]*attempt 2[^]*SMTP reply: 250/);
    expect(sink.received.filter((r) => r.rcptTo.includes('grey@dest.test'))).to.have.length(1);
    await context.close();
  });

  it('cancels a scheduled email and removes a suppression, each after a confirmation', async () => {
    const context = await browser.context({ width: 390 });
    const page = await signIn(context);
    await page.goto(`${api.url}/console/emails/${ids.scheduled}`);
    await page.getByRole('link', { name: 'Cancel email' }).click();
    await page.getByRole('button', { name: 'Cancel email' }).click();
    await page.waitForURL(`${api.url}/console/emails/${ids.scheduled}`);
    expect(await page.locator('.lead [data-state]').getAttribute('data-state')).to.equal('canceled');
    expect(await page.getByRole('link', { name: 'Cancel email' }).count()).to.equal(0);

    // On a phone the menu is a <details>: open it, then follow the link.
    await page.getByText('Menu', { exact: true }).click();
    await screenshot(page, 'menu-open-390');
    await page.getByRole('navigation', { name: 'Main menu' }).getByRole('link', { name: 'Suppressions' }).click();
    const row = page.locator('tr', { hasText: 'blocked@dest.test' });
    await row.getByRole('link', { name: 'Remove' }).click();
    await page.getByRole('button', { name: 'Remove suppression' }).click();
    await page.getByText('blocked@dest.test is no longer suppressed.').waitFor();
    expect(await page.locator('tr', { hasText: 'blocked@dest.test' }).count()).to.equal(0);
    await context.close();
  });

  it('refuses a CSV with a bad line, naming it, and imports nothing', async () => {
    const context = await browser.context();
    const page = await signIn(context);
    await page.goto(`${api.url}/console/suppressions`);
    await page.getByLabel('CSV file').setInputFiles({
      name: 'list.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('email,reason\none@dest.test,manual\nnot an address,manual\ntwo@dest.test,\n'),
    });
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByRole('heading', { level: 1, name: 'Import refused' }).waitFor();
    expect(await page.locator('[data-import-errors] li').allInnerTexts()).to.deep.equal([
      'line 3: "not an address" is not a valid address: it is not an email address (missing local part or @)',
    ]);
    await check(page, 'import-refused', 1280);
    const n = await api.deps.sql`select 1 from suppressions where email in ('one@dest.test', 'two@dest.test')`;
    expect(n).to.have.length(0);
    await context.close();
  });

  it('passes axe at 1280 px and 390 px on every page, in light and dark, without sideways scrolling', async () => {
    // The reputation page with answers to show (the host's address listed: every organization sees it).
    await api.deps.sql`
      insert into rbl_checks (kind, target, zone, status, listed, answer, listed_since)
      values ('ip', '198.51.100.25', 'zen.spamhaus.org', 'listed', true, '127.0.0.2', now()),
             ('ip', '198.51.100.25', 'bl.spamcop.net', 'unknown', false, 'ETIMEOUT', null)
      on conflict do nothing`;
    const pages: [string, string][] = [
      ['overview', '/console'],
      ['emails', '/console/emails'],
      ['emails-filtered', '/console/emails?to=grey%40dest.test'],
      ['emails-test', '/console/emails?mode=test'],
      ['emails-empty', '/console/emails?to=nobody%40dest.test'],
      ['email-detail', `/console/emails/${ids.grey}`],
      ['email-detail-xss', `/console/emails/${ids.xss}`],
      ['email-cancel', `/console/emails/${ids.scheduled}/cancel`],
      ['emails-bulk-retry', '/console/emails/bulk/retry?to=%40dest.test'],
      ['emails-bulk-none', '/console/emails/bulk/unsuppress?to=nobody%40dest.test'],
      ['suppressions', '/console/suppressions'],
      ['keys', '/console/keys'],
      ['key-rotate', `/console/keys/${ids.key}/rotate`],
      ['audit', '/console/audit'],
      ['request-log', '/console/logs'],
      ['metrics', '/console/metrics'],
      ['reputation', '/console/reputation'],
      ['metrics-test', '/console/metrics?mode=test&days=7'],
      ['overview-test', '/console?mode=test'],
      ['domains', '/console/domains'],
      ['webhooks', '/console/webhooks'],
      ['users', '/console/users'],
      ['account', '/console/account'],
      ['not-found', '/console/nope'],
    ];
    for (const width of [1280, 390]) {
      for (const dark of [false, true]) {
        const context = await browser.context({ width, dark });
        const page = await signIn(context);
        for (const [name, path] of pages) {
          await page.goto(`${api.url}${path}`);
          await check(page, `${name}${dark ? '-dark' : ''}`, width);
          if (width === 1280 && (name.startsWith('emails') || name === 'keys')) {
            // On a desktop the list fits its card: long subjects and addresses are cut short.
            const hidden = (await page.evaluate(
              `[...document.querySelectorAll('.table-wrap')].map((el) => el.scrollWidth - el.clientWidth)`,
            )) as number[];
            expect(Math.max(0, ...hidden), name).to.equal(0);
          }
          if (width === 390 && name.startsWith('emails')) {
            // On a phone every listed subject shows (cards, not a table).
            const subjects = (await page.evaluate(
              `[...document.querySelectorAll('td.subject')].map((el) => el.offsetWidth)`,
            )) as number[];
            expect(Math.min(...subjects, Infinity), name).to.be.greaterThan(100);
          }
        }
        // A key's actions are on screen at both widths (the table does not hide them to the right).
        await page.goto(`${api.url}/console/keys`);
        const rotate = await page.getByRole('link', { name: 'Rotate web app' }).boundingBox();
        expect(rotate, 'Rotate web app').to.not.equal(null);
        expect(rotate!.x + rotate!.width, 'Rotate web app').to.be.at.most(width);
        await page.goto(`${api.url}/console/login`); // signed in: sent on
        await context.close();
      }
      const out = await browser.context({ width });
      const login = await out.newPage();
      await login.goto(`${api.url}/console/login`);
      await check(login, 'login', width);
      await out.close();
    }
    expect(errors, 'script errors and CSP refusals').to.deep.equal([]);
  });

  it('works without JavaScript: sign in, filter, read an email (times in UTC)', async () => {
    const context = await browser.context({ javaScript: false });
    const page = await signIn(context);
    await page.goto(`${api.url}/console/emails`);
    await page.getByLabel('Recipient').fill('grey@dest.test');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: 'Greylisted hello' }).click();
    const time = page.locator('.timeline time').first();
    expect(await time.innerText()).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    await context.close();
  });
});
