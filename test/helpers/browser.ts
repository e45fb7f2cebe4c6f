// Debian's Chromium driven by playwright-core for the browser tests: nothing is downloaded at
// test time (.ci/run installs the `chromium` package when it is missing). `checkPage` runs
// axe-core in the page (0 serious or critical violations), checks that the page does not scroll
// sideways, and writes a screenshot under test-output/ for review.
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { track } from './resources.js';
import { ROOT } from './source-scan.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context(opts?: { width?: number; javaScript?: boolean; dark?: boolean }): Promise<BrowserContext>;
  close(): Promise<void>;
}

/**
 * Launches the system Chromium. playwright-core's `launch` gives every launch a fresh temporary
 * user-data dir of its own (and removes it on close): no profile is shared between runs.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  const close = track('chromium', () => browser.close());
  return {
    async context(o = {}) {
      return await browser.newContext({
        viewport: { width: o.width ?? 1280, height: o.width && o.width < 600 ? 844 : 900 },
        deviceScaleFactor: 1,
        javaScriptEnabled: o.javaScript ?? true,
        colorScheme: o.dark ? 'dark' : 'light',
        timezoneId: 'Europe/Paris',
        locale: 'en-GB',
      });
    },
    close,
  };
}

export const OUTPUT = path.join(ROOT, 'test-output', 'console');
let axeSource: string | null = null;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core's serious and critical violations on the page as it is now (the script is evaluated
 * through the DevTools protocol, so the page's CSP does not stop it and need not be loosened).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  // (Expressions as strings: they run in the page, whose DOM types this project does not load.)
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * The elements that stick out of the viewport's right edge (something overflows the page
 * instead of scrolling in its card); empty when the page does not scroll sideways.
 */
export async function overflowsSideways(page: Page): Promise<string[]> {
  return (await page.evaluate(`(() => {
    if (document.documentElement.scrollWidth <= window.innerWidth + 1) return [];
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right > window.innerWidth + 1 && !el.closest('.table-wrap, details:not([open])')) {
        out.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : ''));
      }
      if (out.length >= 5) break;
    }
    return out.length ? out : ['(page)'];
  })()`)) as string[];
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(OUTPUT, { recursive: true });
  const file = path.join(OUTPUT, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** What every console page must pass: one h1, no serious axe violation, no sideways scroll; and a screenshot. */
export async function checkPage(page: Page, name: string, width: number): Promise<void> {
  await screenshot(page, `${name}-${width}`);
  expect(await page.locator('h1').count(), `${name}: one h1`).to.equal(1);
  expect(await axeViolations(page), `${name} at ${width} px`).to.deep.equal([]);
  const wide = await overflowsSideways(page);
  expect(wide, `${name} at ${width} px scrolls sideways: ${wide.join(', ')}`).to.deep.equal([]);
}
