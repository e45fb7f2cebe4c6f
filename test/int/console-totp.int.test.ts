// Two-step sign-in in a real browser (Debian's Chromium through playwright-core): an admin sets
// up TOTP from the QR page (the code computed by otpauth, as an authenticator app does), signs in
// again with a code, then with a recovery code (good once); a wrong code is refused; an
// organization that requires it sends an admin without it to Account first. Each page passes
// axe at 1280 px and 390 px.
import { expect } from 'chai';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { checkPage, launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('console two-step sign-in', function () {
  this.timeout(300_000);
  let api: TestApi;
  let org: SeededOrg;
  let browser: TestBrowser;
  let secret = '';
  let recovery: string[] = [];

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await api?.close();
  });

  /** The code an authenticator app shows for `secret`, `ahead` steps from now. */
  function code(ahead = 0): string {
    const t = new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });
    return t.generate({ timestamp: Date.now() + ahead * 30_000 });
  }

  async function password(page: Page, email: string, pw: string): Promise<void> {
    await page.goto(`${api.url}/console/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(pw);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  async function signOut(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Sign out' }).first().click({ force: true });
    await page.waitForURL(`${api.url}/console/login`);
  }

  it('sets up TOTP from its QR page, then signs in with a code, and with a recovery code once', async () => {
    const context = await browser.context();
    const page = await context.newPage();
    await password(page, org.user.email, org.user.password);
    await page.waitForURL(`${api.url}/console`);
    await page.goto(`${api.url}/console/account`);
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).click();
    await page.getByRole('img', { name: 'QR code of the key for your authenticator app' }).waitFor();
    secret = (await page.locator('[data-totp-secret]').innerText()).trim();
    expect(secret).to.match(/^[A-Z2-7]{32}$/);
    await checkPage(page, 'totp-setup', 1280);
    await page.getByLabel('Code from the app').fill(code());
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { level: 1, name: 'Two-step sign-in is on' }).waitFor();
    recovery = (await page.locator('[data-recovery-codes] li').allInnerTexts()).map((s) => s.trim());
    expect(recovery).to.have.length(10);
    await checkPage(page, 'totp-recovery', 1280);
    await page.goto(`${api.url}/console/account`);
    await signOut(page);

    // The password alone is not enough any more.
    await password(page, org.user.email, org.user.password);
    await page.waitForURL(`${api.url}/console/login/code`);
    expect(await context.cookies()).to.satisfy(
      (cs: { name: string }[]) => !cs.some((c) => c.name === 'console_session'),
    );
    const wrong = code(1) === '000000' ? '111111' : '000000';
    await page.getByLabel('Code from your authenticator app').fill(wrong);
    await page.getByRole('button', { name: 'Verify' }).click();
    expect(await page.locator('[data-error="code"]').innerText()).to.contain('wrong');
    // (The next step's code: the current one was spent turning it on; an app shows it 30 s later.)
    await page.getByLabel('Code from your authenticator app').fill(code(1));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${api.url}/console`);
    await signOut(page);

    // A recovery code instead, good once.
    for (const expectOk of [true, false]) {
      await password(page, org.user.email, org.user.password);
      await page.waitForURL(`${api.url}/console/login/code`);
      await page.getByLabel('Code from your authenticator app').fill(recovery[0]!.toUpperCase());
      await page.getByRole('button', { name: 'Verify' }).click();
      if (expectOk) {
        await page.waitForURL(`${api.url}/console`);
        await signOut(page);
      } else {
        expect(await page.locator('[data-error="code"]').innerText()).to.contain('used already');
      }
    }
    await context.close();
    const phone = await browser.context({ width: 390, dark: true });
    const p = await phone.newPage();
    await password(p, org.user.email, org.user.password);
    await p.waitForURL(`${api.url}/console/login/code`);
    await checkPage(p, 'totp-code', 390);
    await p.getByLabel('Code from your authenticator app').fill(recovery[1]!);
    await p.getByRole('button', { name: 'Verify' }).click();
    await p.waitForURL(`${api.url}/console`);
    await p.goto(`${api.url}/console/account`);
    expect(await p.locator('[data-totp="on"]').innerText()).to.contain('8 recovery codes left');
    await checkPage(p, 'totp-account', 390);
    await phone.close();
  });

  it('requires it of admins when the organization says so: an admin without it is sent to Account first', async () => {
    const context = await browser.context();
    const page = await context.newPage();
    await password(page, org.user.email, org.user.password);
    await page.getByLabel('Code from your authenticator app').fill(recovery[2]!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${api.url}/console`);
    await page.goto(`${api.url}/console/users`);
    await page.getByLabel('Email').fill('second-admin@example.test');
    await page.getByLabel('Role').selectOption('admin');
    await page.getByRole('button', { name: 'Add user' }).click();
    const pw = (await page.locator('[data-password]').innerText()).trim();
    await page.goto(`${api.url}/console/settings`);
    await page.getByLabel('Require two-step sign-in for admins').check();
    await page.getByRole('button', { name: 'Save' }).last().click();
    await page.getByText('Admins now need two-step sign-in.').waitFor();
    await context.close();

    const other = await browser.context();
    const p = await other.newPage();
    await password(p, 'second-admin@example.test', pw);
    await p.waitForURL(`${api.url}/console/account`);
    await p.locator('[data-totp-required]').waitFor();
    await p.goto(`${api.url}/console/emails`);
    expect(p.url()).to.equal(`${api.url}/console/account`);
    await checkPage(p, 'totp-required', 1280);
    await other.close();
  });
});
