// The dashboard in a real browser (issue 17): Debian's chromium, headless, against a real
// `reef serve` with the bundled examples. Each test checks what a person would see and saves
// a screenshot under <build>/screenshots/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { launchBrowser, openPage, screenshot, startReef, unlabelledControls } from './harness.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

describe('overview', () => {
  let reef;
  let page;
  const pageErrors = [];
  before(async () => {
    reef = await startReef();
    page = await openPage(browser, pageErrors);
  });
  after(async () => { await page?.context().close(); await reef?.stop(); });

  test('shows the node, its reactors and the example program', async () => {
    const started = Date.now();
    await page.goto(reef.base + '/');
    const cards = page.getByRole('definition');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText('Engine tier').waitFor();
    assert.ok(Date.now() - started < 5000);
    const summary = page.getByLabel('Node summary');
    await summary.getByText('counter-demo').waitFor();
    assert.match(await summary.innerText(), /Reactors\s+2 \/ 2 up/);
    // The C bank and DCB commands, the bank in AssemblyScript and Rust but for their effects
    // (uploaded, not activated: scripts/run.sh).
    assert.match(await summary.innerText(), /Modules\s+18 active of 20/);
    assert.match(await summary.innerText(), /Storage\s+durable/);
    const rows = page.getByRole('table', { name: 'Reactors' }).locator('tbody tr');
    assert.equal(await rows.count(), 2);
    assert.match(await rows.first().innerText(), /#0\s+up/);
    assert.ok(await cards.count() >= 8);
    assert.deepEqual(pageErrors, []);
  });

  test('the event store head and the throughput chart follow a deposit', async () => {
    await reef.call('POST', '/commands/open-account/execute', { account_id: 'b1', owner: 'Ada' });
    await reef.call('POST', '/commands/deposit/execute', { account_id: 'b1', amount: 100 });
    const head = page.getByLabel('Node summary').locator('.card', { hasText: 'Event store head' });
    await head.locator('dd', { hasText: /^2\b/ }).waitFor({ timeout: 10_000 });
    // The chart's legend shows the last value of each series; the appends made it non-zero.
    const throughput = page.getByRole('figure', { name: 'Throughput (per second)' });
    await throughput.locator('canvas').waitFor();
    await screenshot(page, 'overview');
    assert.deepEqual(pageErrors, []);
  });

  test('labels and keyboard basics', async () => {
    assert.deepEqual(await unlabelledControls(page), []);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Overview');
    // The skip link moves the focus to the content and stays on the page.
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'main');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  });
});

describe('login', () => {
  const token = 'browser-test-token-0123456789';
  let reef;
  let page;
  const pageErrors = [];
  before(async () => {
    reef = await startReef({ bare: true, env: { REEF_AUTH_TOKEN: token } });
    page = await openPage(browser, pageErrors);
  });
  after(async () => { await page?.context().close(); await reef?.stop(); });

  test('the page asks for the token, refuses a wrong one and keeps a session in a cookie', async () => {
    await page.goto(reef.base + '/');
    const input = page.getByLabel('Auth token');
    await input.waitFor();
    await screenshot(page, 'login');
    assert.deepEqual(await unlabelledControls(page), []);
    // Going to another page before logging in keeps the form.
    await page.getByRole('link', { name: 'Actors' }).click();
    await page.getByLabel('Auth token').waitFor();
    await input.fill('wrong');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').getByText('not this server').waitFor();
    await input.fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
    // The page asked for comes up; the WebSocket protocol it uses takes the cookie too.
    await page.getByRole('heading', { name: 'Actors' }).waitFor();
    await page.getByRole('status').getByText('0 actors').waitFor();
    // The cookie is there, HttpOnly and SameSite=Strict; scripts cannot read it; the token is
    // in no URL.
    const cookies = await page.context().cookies();
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0].name, `reef_session_${new URL(reef.base).port}`);
    assert.ok(!cookies[0].value.includes(token), 'the cookie proves the token, it does not hold it');
    assert.equal(cookies[0].httpOnly, true);
    assert.equal(cookies[0].sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '');
    assert.ok(!page.url().includes(token));
    assert.deepEqual(pageErrors, []);
  });

  test('log out forgets the cookie and shows the form again', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Auth token').waitFor();
    assert.deepEqual(await page.context().cookies(), []);
    await page.reload();
    await page.getByLabel('Auth token').waitFor();
  });

  test('the API refuses requests without the token, and other sites pages', async () => {
    const refused = await fetch(reef.base + '/status');
    assert.equal(refused.status, 401);
    const crossSite = await fetch(reef.base + '/login', {
      method: 'POST', headers: { Origin: 'http://evil.example' }, body: JSON.stringify({ token }),
    });
    assert.equal(crossSite.status, 403);
  });
});
