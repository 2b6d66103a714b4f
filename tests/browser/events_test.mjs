// The dashboard's events page in a real browser (issue 17, page 4): newest first, filtered by
// type and tag, paged; an event's data, metadata and position; new events followed live.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { screenshot, unlabelledControls, withDashboard } from './harness.mjs';

let reef;
let page;
const { pageErrors } = withDashboard({ bare: true }, async (session) => {
  ({ reef, page } = session);
  // 120 events: 60 accounts opened, then 60 deposits, tagged by account.
  const events = [];
  for (let i = 1; i <= 60; ++i) events.push({ type: 'AccountOpened', tags: [`account:${i}`], data: { account_id: `${i}` } });
  for (let i = 1; i <= 60; ++i) events.push({ type: 'MoneyDeposited', tags: [`account:${i}`], data: { account_id: `${i}`, amount: i } });
  await reef.call('POST', '/events/append', { events });
});

const positions = async () => page.getByRole('table', { name: 'Events' })
  .locator('tbody tr:not(.details) td:first-child').allInnerTexts();

describe('events', () => {
  test('newest first, 50 to a page, older and newer pages', async () => {
    await page.goto(reef.base + '/#/events');
    await page.getByText('Head 120').waitFor();
    let shown = await positions();
    assert.equal(shown.length, 50);
    assert.equal(shown[0], '120');
    assert.equal(shown[49], '71');
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.getByText('positions 21 to 70').waitFor();
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.getByText('positions 1 to 20').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Older →' }).isDisabled(), true);
    await page.getByRole('button', { name: '← Newer' }).click();
    await page.getByText('positions 21 to 70').waitFor();
    assert.deepEqual(await unlabelledControls(page), []);
  });

  test('filtered by type and tag; an event opens to its data and metadata', async () => {
    await page.getByLabel('Types (any of)').fill('MoneyDeposited');
    await page.getByLabel('Tags (all of)').fill('account:7');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('positions 67 to 67').waitFor();
    const open = page.getByRole('button', { name: 'Event 67: show data and metadata' });
    await open.click();
    assert.equal(await open.getAttribute('aria-expanded'), 'true');
    const details = page.locator('tr.details:not([hidden])');
    assert.match(await details.innerText(), /"amount": 7/);
    assert.match(await details.innerText(), /timestamp_ms/);
    assert.deepEqual(pageErrors, []);
  });

  test('new events appear live while the newest page is shown', async () => {
    await page.getByLabel('Types (any of)').fill('');
    await page.getByLabel('Tags (all of)').fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('positions 71 to 120 · following').waitFor();
    await reef.call('POST', '/events/append', { events: [{ type: 'MoneyWithdrawn', tags: ['account:1'], data: { amount: 1 } }] });
    await page.getByRole('table', { name: 'Events' }).getByText('MoneyWithdrawn').waitFor();
    assert.equal((await positions())[0], '121');
    await screenshot(page, 'events');
    assert.deepEqual(pageErrors, []);
  });
});
