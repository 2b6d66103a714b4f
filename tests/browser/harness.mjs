// What the dashboard's browser tests share: a real `reef serve` with the bundled examples
// (started by scripts/run.sh, as `make run` does), Debian's chromium driven by
// playwright-core (from web/node_modules, where scripts/setup.sh installs it), and screenshots
// saved under the build folder.
//
// Environment (tests/browser/CMakeLists.txt sets it): REEF_SOURCE_DIR, REEF_BUILD_DIR,
// REEF_CHROMIUM (default /usr/bin/chromium).
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import path from 'node:path';

import { buildDir, sourceDir, startReef } from '../support/reef_server.mjs';

export { buildDir, sourceDir, startReef };
export const screenshotDir = path.join(buildDir, 'screenshots');
const require = createRequire(path.join(sourceDir, 'web', 'package.json'));
const { chromium } = require('playwright-core');

export async function launchBrowser() {
  return chromium.launch({ executablePath: process.env.REEF_CHROMIUM || '/usr/bin/chromium' });
}

// A new page whose uncaught exceptions and console errors are collected in `pageErrors`, for
// the tests to check. The browser's own note on an HTTP error answer ("Failed to load
// resource") is not one: the page shows those answers to the user (a 401 before the login, a
// 422 of a rejected command).
export async function openPage(browser, pageErrors) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      pageErrors.push(`console error: ${message.text()}`);
    }
  });
  return page;
}

export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  const file = path.join(screenshotDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

// The labelling and keyboard basics every page must pass: each form control has a label
// (a <label for>, a wrapping label or aria-label), each button a name, each image a text.
export async function unlabelledControls(page) {
  return page.evaluate(() => {
    const missing = [];
    for (const c of document.querySelectorAll('input, select, textarea')) {
      if (c.type === 'hidden') continue;
      if (!(c.labels && c.labels.length) && !c.getAttribute('aria-label') &&
          !c.getAttribute('aria-labelledby')) missing.push(c.outerHTML.slice(0, 80));
    }
    for (const b of document.querySelectorAll('button, a[href]')) {
      if (!b.textContent.trim() && !b.getAttribute('aria-label')) missing.push(b.outerHTML.slice(0, 80));
    }
    return missing;
  });
}

// The set-up of a test file with one Reef and one page: starts them before its tests (options
// as startReef's), calls `ready(session)` with `reef` and `page` filled in, and stops them
// after. `pageErrors` collects the page's errors (openPage).
export function withDashboard(options, ready) {
  const session = { reef: null, page: null, pageErrors: [], browser: null };
  before(async () => {
    session.browser = await launchBrowser();
    session.reef = await startReef(options);
    session.page = await openPage(session.browser, session.pageErrors);
    await ready(session);
  });
  after(async () => {
    await session.page?.context().close();
    await session.browser?.close();
    await session.reef?.stop();
  });
  return session;
}

// Confirms the open confirmation dialog of `page` with its button `label`.
export async function confirmDialog(page, label) {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: label }).click();
  await dialog.waitFor({ state: 'detached' });
}
