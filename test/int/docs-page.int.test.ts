// /docs/api in a real browser (Debian's Chromium through playwright-core): the reference page
// renders every operation of the OpenAPI document from files this process serves, asks nothing of
// any other origin, runs no script and applies no stylesheet that its CSP refuses.
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { track } from '../helpers/resources.js';
import { startApi, type TestApi } from '../helpers/stack.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('/docs/api in a browser', function () {
  this.timeout(60_000);
  let api: TestApi;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;

  before(async function () {
    if (!existsSync(CHROMIUM))
      throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    api = await startApi();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    closeBrowser = track('chromium', () => browser.close());
  });
  after(async () => {
    await closeBrowser?.();
    await api?.close();
  });

  it('renders every operation of the document, from this origin only, within its CSP', async () => {
    const doc = (await api.request('GET', '/openapi.json')).json as { paths: Record<string, object> };
    const operations = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);

    const page = await browser.newPage();
    const console: string[] = [];
    const foreign: string[] = [];
    const errors: string[] = [];
    page.on('console', (m) => console.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith(api.url) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    const res = await page.goto(`${api.url}/docs/api`);
    expect(res?.status()).to.equal(200);

    await page.locator('.opblock-summary').first().waitFor();
    // (Expressions as strings: they run in the page, whose DOM types this project does not load.)
    await page.waitForFunction(`document.querySelectorAll('.opblock').length >= ${operations}`);
    expect(await page.locator('.opblock').count()).to.equal(operations);
    expect(await page.locator('.info .title').innerText()).to.include('Tern API');
    const send = page.locator('.opblock-post', { hasText: 'Send an email' }).first();
    expect(await send.isVisible()).to.equal(true);

    // Opened, an operation shows its permission rules, its body schema and its error codes.
    await send.locator('.opblock-summary').click();
    const body = send.locator('.opblock-body');
    await body.waitFor();
    await page.waitForFunction(`document.querySelector('.opblock-body')?.textContent?.includes('sending_paused')`);
    const text = await body.innerText();
    expect(text).to.include('Permission');
    expect(text).to.include('sending_paused');
    expect(text).to.include('Idempotency-Key');

    expect(foreign, 'requests to other origins').to.deep.equal([]);
    expect(errors, 'page errors').to.deep.equal([]);
    // Scripts and stylesheets all come from files; the only refusals allowed are the few icons
    // Swagger UI writes as data: images (img-src 'self' keeps them out; the page does not need them).
    const refused = console.filter((m) => /Content Security Policy/.test(m) && !/Loading the image 'data:/.test(m));
    expect(refused, 'CSP refusals').to.deep.equal([]);
    await page.close();
  });
});
