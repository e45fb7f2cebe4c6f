// The console's management pages in a real browser (Debian's Chromium through playwright-core):
// an admin replays a failed webhook delivery (a real delivery worker sends it again to a loopback
// receiver), adds a domain and reads the records to publish, mints a key and sees its token once.
// Each page passes axe-core (0 serious or critical violations) at 1280 px and 390 px, does not
// scroll sideways, and is written as a screenshot under test-output/console/.
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { checkPage, launchBrowser, type TestBrowser } from '../helpers/browser.js';
import type { Received } from '../helpers/receiver.js';
import { startWebhookStack, type WebhookStack } from '../helpers/webhook-stack.js';
import { waitFor } from '../helpers/wait.js';
import { seedEmail } from '../helpers/webhook-seed.js';
import { seedContent, type SeededContent } from '../helpers/console-seed.js';

describe('console management in a browser', function () {
  this.timeout(420_000);
  let s: WebhookStack;
  let browser: TestBrowser;
  let failing = true;
  let webhookId = '';
  let failedId = '';
  let content: SeededContent;
  const errors: string[] = [];

  before(async () => {
    s = await startWebhookStack({
      respond: (req: Received) =>
        req.path === '/hooks' && failing
          ? (res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('maintenance window, back soon')
          : 200,
      delivery: { schedule: [] },
    });
    const hook = await s.createWebhook({ url: `${s.receiver.url}/hooks`, description: 'Order system' });
    webhookId = hook.id;
    const test = await s.api.request('POST', `/webhooks/${webhookId}/test`, {
      token: s.org.key.token,
      body: { type: 'email.delivered' },
    });
    expect(test.status).to.equal(202);
    failedId = test.json.id as string;
    await waitFor(
      'the delivery to fail',
      async () =>
        (await s.api.deps.sql`select 1 from webhook_deliveries where id = ${failedId} and status = 'failed'`).length ===
        1,
    );
    content = await seedContent(s.api, s.org);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
  });

  function watch(context: BrowserContext): void {
    context.on('page', (p) => {
      p.on('pageerror', (e) => errors.push(e.message));
      p.on('console', (m) => {
        if (/Content Security Policy|Refused to/.test(m.text())) errors.push(m.text());
      });
    });
  }

  async function signIn(context: BrowserContext): Promise<Page> {
    watch(context);
    const page = await context.newPage();
    await page.goto(`${s.api.url}/console/login`);
    await page.getByLabel('Email').fill(s.org.user.email);
    await page.getByLabel('Password').fill(s.org.user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${s.api.url}/console`);
    return page;
  }

  const check = checkPage;

  const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });

  it('replays a failed webhook delivery from its page', async () => {
    const context = await browser.context();
    const page = await signIn(context);
    await nav(page).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: `${s.receiver.url}/hooks` }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhook endpoint' }).waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    const rows = page.getByRole('region', { name: 'Deliveries' }).locator('tbody tr');
    expect(await rows.count()).to.equal(1);
    expect(await rows.first().locator('[data-state]').innerText()).to.equal('failed');
    await check(page, 'webhook', 1280);
    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'Delivery of email.delivered' }).waitFor();
    await page.getByText('Response body (first 1 KB)').click();
    expect(await page.locator('[data-response]').innerText()).to.equal('maintenance window, back soon');
    await check(page, 'webhook-delivery', 1280);

    failing = false;
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByRole('heading', { level: 1, name: 'Replay this delivery?' }).waitFor();
    await page.getByRole('button', { name: 'Replay delivery' }).click();
    await page.getByText('Replay queued.').waitFor();
    await waitFor('the replayed delivery to succeed', async () => {
      await page.reload();
      return (await page.locator('.lead [data-state]').getAttribute('data-state')) === 'succeeded';
    });
    expect(await page.locator('[data-attempt="2"]').innerText()).to.contain('HTTP 200');
    expect(s.receiver.received.filter((r) => r.path === '/hooks')).to.have.length(2);
    await context.close();
  });

  it('adds a domain and shows the records to publish, with copy buttons', async () => {
    const context = await browser.context({ width: 390 });
    const page = await signIn(context);
    await page.getByText('Menu', { exact: true }).click();
    await page.getByRole('navigation', { name: 'Main menu' }).getByRole('link', { name: 'Domains' }).click();
    await page.getByLabel('Domain name').fill('news.shop.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { level: 1, name: 'news.shop.test' }).waitFor();
    const records = page.getByRole('region', { name: 'DNS records' });
    expect(await records.locator('tbody tr').count()).to.be.greaterThan(3);
    expect(await records.getByRole('button', { name: 'Copy value' }).first().isVisible()).to.equal(true);
    expect(await records.locator('[data-record="DKIM"] td').nth(3).innerText()).to.contain('v=DKIM1');
    // On a phone each record is a card of labelled values: the value and its copy button are on
    // screen, not in a part of the table scrolled out of sight.
    for (const cell of ['td[data-label="Value"]', 'td[data-label="Status"]']) {
      const box = await records.locator(`[data-record="DKIM"] ${cell}`).boundingBox();
      expect(box, cell).to.not.equal(null);
      expect(box!.x + box!.width, cell).to.be.at.most(390);
    }
    await check(page, 'domain-added', 390);
    await context.close();
  });

  it('mints a key and shows its token once', async () => {
    const context = await browser.context();
    const page = await signIn(context);
    await nav(page).getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('billing service');
    await page.getByRole('button', { name: 'Mint key' }).click();
    await page.getByRole('heading', { level: 1, name: 'Key minted' }).waitFor();
    const token = (await page.locator('[data-token]').innerText()).trim();
    expect(token).to.match(/^tern_live_/);
    await check(page, 'key-minted', 1280);
    await page.getByRole('link', { name: 'Back to API keys' }).click();
    expect(await page.locator('tr', { hasText: 'billing service' }).count()).to.equal(1);
    expect(await page.content()).not.to.contain(token);
    await context.close();
  });

  it("refreshes a running broadcast's progress by itself, and shows its end", async () => {
    const sql = s.api.deps.sql;
    await sql`update broadcasts set status = 'sending' where id = ${content.broadcastId}`;
    const context = await browser.context();
    const page = await signIn(context);
    await page.goto(`${s.api.url}/console/broadcasts/${content.broadcastId}`);
    const delivered = page.locator('[data-progress] div', { hasText: 'Delivered' }).locator('dd');
    expect(await delivered.innerText()).to.equal('0');
    const email = await seedEmail(sql, {
      orgId: s.org.organization.id,
      domainId: s.org.domains['acme.test']!.id,
      to: ['live@dest.test'],
    });
    await sql`update email_recipients set status = 'delivered', delivered_at = now() where email_id = ${email.id}`;
    await sql`insert into broadcast_recipients (broadcast_id, contact_id, email_id, outcome)
      values (${content.broadcastId}, 'ct_live', ${email.id}, 'sent')`;
    await waitFor('the progress to refresh', async () => (await delivered.innerText()) === '1', 20_000);
    await sql`update broadcasts set status = 'sent', sent_at = now() where id = ${content.broadcastId}`;
    await waitFor(
      'the page to show the end',
      async () =>
        (await page
          .locator('.lead [data-state]')
          .getAttribute('data-state')
          .catch(() => null)) === 'sent',
      20_000,
    );
    await context.close();
  });

  it('adds, edits, unsubscribes and deletes a contact, the last two after a confirmation', async () => {
    const context = await browser.context({ width: 390 });
    const page = await signIn(context);
    await page.goto(`${s.api.url}/console/contacts`);
    await page.getByRole('link', { name: 'Add contact' }).click();
    await page.getByLabel('Email address').fill('Ada@Example.test');
    await page.getByLabel('First name').fill('Ada');
    await page.getByRole('button', { name: 'Add contact' }).click();
    await page.getByRole('heading', { level: 1, name: 'ada@example.test' }).waitFor();
    await page.getByText('ada@example.test is added.').waitFor();
    await check(page, 'contact-added', 390);
    const row = async () =>
      (
        await s.api.deps.sql<
          { id: string; first_name: string | null; last_name: string | null; unsubscribed: boolean }[]
        >`
          select id, first_name, last_name, unsubscribed from contacts where email = 'ada@example.test'`
      )[0];
    expect(await row()).to.deep.include({ first_name: 'Ada', last_name: null, unsubscribed: false });
    // The API sees the same contact.
    const api = await s.api.request('GET', `/contacts/${(await row())!.id}`, { token: s.org.key.token });
    expect(api.json).to.deep.include({ email: 'ada@example.test', first_name: 'Ada' });

    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Last name').fill('Lovelace');
    await check(page, 'contact-edit', 390);
    await page.getByRole('button', { name: 'Save contact' }).click();
    await page.getByText('Contact saved.').waitFor();
    expect(await row()).to.deep.include({ last_name: 'Lovelace' });

    await page.getByRole('link', { name: 'Unsubscribe…' }).click();
    await page.getByRole('heading', { level: 1, name: 'Unsubscribe this contact?' }).waitFor();
    expect((await row())!.unsubscribed).to.equal(false);
    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    await page.getByText('ada@example.test is unsubscribed.').waitFor();
    expect((await row())!.unsubscribed).to.equal(true);

    await page.getByRole('link', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete contact' }).click();
    await page.getByText('ada@example.test is deleted.').waitFor();
    expect(await row()).to.equal(undefined);
    await context.close();
  });

  it('builds a segment from conditions, shows its filter in words and its contacts, and deletes it', async () => {
    for (const [email, plan] of [
      ['pro1@builder.test', 'pro'],
      ['free1@builder.test', 'free'],
      ['pro2@elsewhere.test', 'pro'],
    ]) {
      const res = await s.api.request('POST', '/contacts', {
        token: s.org.key.token,
        body: { email, properties: { plan } },
      });
      expect(res.status, res.text).to.be.oneOf([200, 201]);
    }
    const context = await browser.context();
    const page = await signIn(context);
    await page.goto(`${s.api.url}/console/segments`);
    await page.getByRole('link', { name: 'New segment' }).click();
    await page.getByLabel('Segment name').fill('Pro builders');
    // Condition 1 starts as "email ends with".
    await page.locator('#f-value_0').fill('@builder.test');
    await page.locator('#f-field_1').selectOption('property');
    await page.locator('#f-property_1').fill('plan');
    await page.locator('#f-op_1').selectOption('eq');
    await page.locator('#f-value_1').fill('pro');
    await check(page, 'segment-new', 1280);
    await page.getByRole('button', { name: 'Create segment' }).click();
    await page.getByRole('heading', { level: 1, name: 'Pro builders' }).waitFor();
    expect(await page.locator('[data-filter-words]').innerText()).to.equal(
      'Contacts where email ends with "@builder.test" and plan is "pro".',
    );
    expect(await page.locator('.lead').innerText()).to.contain('1 contact match now.');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const api = await s.api.request('GET', `/segments/${id}`, { token: s.org.key.token });
    expect(api.json.filter).to.deep.equal({
      all: [
        { field: 'email', op: 'ends_with', value: '@builder.test' },
        { field: 'properties.plan', op: 'eq', value: 'pro' },
      ],
    });
    // A condition the API would refuse is refused, naming it.
    await page.goto(`${s.api.url}/console/segments/new`);
    await page.getByLabel('Segment name').fill('Wrong');
    await page.locator('#f-field_0').selectOption('unsubscribed');
    await page.locator('#f-op_0').selectOption('contains');
    await page.locator('#f-value_0').fill('x');
    await page.getByRole('button', { name: 'Create segment' }).click();
    expect(await page.locator('[data-error="validation_error"]').innerText()).to.match(
      /^Condition 1\.op must be one of/,
    );

    await page.goto(`${s.api.url}/console/segments/${id}`);
    await page.getByRole('link', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete segment' }).click();
    await page.getByText('Segment Pro builders is deleted.').waitFor();
    expect(await s.api.deps.sql`select 1 from segments where id = ${id}`).to.have.length(0);
    await context.close();
  });

  it('cancels a scheduled broadcast after a confirmation', async () => {
    const [seg] = await s.api.deps.sql<{ id: string }[]>`select id from segments where name = 'Pro plan'`;
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const created = await s.api.request('POST', '/broadcasts', {
      token: s.org.key.token,
      body: {
        name: 'Weekend sale',
        from: 'Acme <news@acme.test>',
        subject: 'Sale',
        html: '<p>Sale</p>',
        segment_id: seg!.id,
        send: true,
        scheduled_at: later,
      },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.json.status).to.equal('scheduled');
    const context = await browser.context({ width: 390 });
    const page = await signIn(context);
    await page.goto(`${s.api.url}/console/broadcasts/${created.json.id}`);
    await page.getByRole('link', { name: 'Cancel broadcast…' }).click();
    await page.getByRole('heading', { level: 1, name: 'Cancel this broadcast?' }).waitFor();
    await check(page, 'broadcast-cancel', 390);
    await page.getByRole('button', { name: 'Cancel broadcast' }).click();
    await page.waitForURL(`${s.api.url}/console/broadcasts/${created.json.id}`);
    expect(await page.locator('.lead [data-state]').getAttribute('data-state')).to.equal('canceled');
    expect(await page.getByRole('link', { name: 'Cancel broadcast…' }).count()).to.equal(0);
    const api = await s.api.request('GET', `/broadcasts/${created.json.id}`, { token: s.org.key.token });
    expect(api.json.status).to.equal('canceled');
    await context.close();
  });

  it('pauses an automation, and resumes it after a confirmation', async () => {
    const [a] = await s.api.deps.sql<{ id: string }[]>`select id from automations where name = 'Onboarding'`;
    const status = async () =>
      (await s.api.request('GET', `/automations/${a!.id}`, { token: s.org.key.token })).json.status as string;
    expect(await status()).to.equal('enabled');
    const context = await browser.context();
    const page = await signIn(context);
    await page.goto(`${s.api.url}/console/automations/${a!.id}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('link', { name: 'Resume…' }).waitFor();
    expect(await status()).to.equal('disabled');
    await page.getByRole('link', { name: 'Resume…' }).click();
    await page.getByRole('heading', { level: 1, name: 'Resume this automation?' }).waitFor();
    expect(await status()).to.equal('disabled');
    await page.getByRole('button', { name: 'Resume automation' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect(await status()).to.equal('enabled');
    await context.close();
  });

  it('passes axe on every management page at 1280 px and 390 px, light and dark', async () => {
    const pages: [string, string][] = [
      ['webhooks', '/console/webhooks'],
      ['webhook-detail', `/console/webhooks/${webhookId}`],
      ['webhook-rotate', `/console/webhooks/${webhookId}/rotate`],
      ['webhook-delivery-page', `/console/webhooks/${webhookId}/deliveries/${failedId}`],
      ['domains', '/console/domains'],
      ['domain', `/console/domains/${s.org.domains['acme.test']!.id}`],
      ['queues', '/console/queues'],
      ['contact-new', '/console/contacts/new'],
      ['segment-new', '/console/segments/new'],
      ...content.pages,
    ];
    for (const width of [1280, 390]) {
      for (const dark of [false, true]) {
        const context = await browser.context({ width, dark });
        const page = await signIn(context);
        for (const [name, path] of pages) {
          const res = await page.goto(`${s.api.url}${path}`);
          expect(res?.status(), path).to.be.below(400);
          await check(page, `${name}${dark ? '-dark' : ''}`, width);
          if (name === 'queues' && width === 390) {
            // On a phone each queue is a short card: its counts side by side under their labels (one
            // label per line, it was 2,700 px for eleven queues).
            const height = (await page.evaluate('document.documentElement.scrollHeight')) as number;
            expect(height, 'queues page height at 390 px').to.be.below(2200);
          }
        }
        await context.close();
      }
    }
    expect(errors, 'script errors and CSP refusals').to.deep.equal([]);
  });
});
