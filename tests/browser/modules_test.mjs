// The dashboard's modules pages in a real browser (issue 17, page 3), on the bank example:
// executing commands from the JSON form, a projector's query showing the balance after a
// deposit, lag back to 0, and a failing effect showing its backoff and error, healed by an
// environment variable set from the page.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { confirmDialog, screenshot, unlabelledControls, withDashboard } from './harness.mjs';

let reef;
let page;
const { pageErrors } = withDashboard({}, async (session) => {
  ({ reef, page } = session);
});

const confirm = (label) => confirmDialog(page, label);

async function execute(command, input) {
  await page.goto(`${reef.base}/#/modules/commands/${command}`);
  await page.getByLabel('Input (JSON)').fill(JSON.stringify(input));
  await page.getByRole('button', { name: 'Execute', exact: true }).click();
  await confirm('Execute');
}

describe('modules', () => {
  test('the list shows the bank and DCB modules with state and lag', async () => {
    await page.goto(reef.base + '/#/modules');
    const projectors = page.getByRole('table', { name: 'Projectors' });
    await projectors.getByRole('link', { name: 'balances', exact: true }).waitFor();
    // The bank's projector in C, AssemblyScript and Rust: make run activates all three.
    const rows = await projectors.locator('tbody tr').allInnerTexts();
    for (const name of ['balances', 'balances-as', 'balances-rs']) {
      const row = new RegExp(`^${name}\\s+1\\.0\\.0\\s+1\\s+running\\s+0\\s+0\\s+0`);
      assert.ok(rows.some((text) => row.test(text)), `${name} in ${JSON.stringify(rows)}`);
    }
    const commands = page.getByRole('table', { name: 'Commands' });
    assert.equal(await commands.locator('tbody tr').count(), 14);
    assert.deepEqual(pageErrors, []);
  });

  test('a command executed from the page shows the events it appended', async () => {
    await execute('open-account', { account_id: 'a1', owner: 'Ada' });
    const appended = page.getByRole('table', { name: 'Appended events' });
    await appended.getByText('AccountOpened').waitFor();
    await execute('deposit', { account_id: 'a1', amount: 100 });
    await page.getByRole('table', { name: 'Appended events' }).getByText('MoneyDeposited').waitFor();
    assert.match(await page.getByText(/Appended 1 event\(s\) at position 2/).innerText(), /position 2/);
    // A rejected command says why.
    await execute('withdraw', { account_id: 'a1', amount: 500 });
    await page.getByRole('alert').getByText('insufficient funds').waitFor();
    assert.deepEqual(await unlabelledControls(page), []);
  });

  test("the projector's query shows the balance, and its lag returns to 0", async () => {
    for (let i = 0; i < 20; ++i) {
      await reef.call('POST', '/commands/deposit/execute', { account_id: 'a1', amount: 10 });
    }
    await page.goto(reef.base + '/#/modules/projectors/balances');
    await page.getByLabel('SQL').fill('SELECT account_id, owner, balance FROM accounts');
    await page.getByRole('button', { name: 'Run query' }).click();
    const rows = page.getByRole('table', { name: 'Query result' });
    await rows.getByText('300').waitFor();
    // Rows come back as JSON objects: their columns in name order.
    assert.match(await rows.locator('tbody tr').innerText(), /a1\s+300\s+Ada/);
    const lag = page.locator('dl.facts div', { hasText: 'Lag' });
    await lag.locator('dd', { hasText: /^0$/ }).waitFor();
    await screenshot(page, 'projector');
  });

  test('a failing effect shows its backoff and error; an environment variable heals it', async () => {
    await page.goto(reef.base + '/#/modules/effects/withdrawal-alert');
    await page.getByLabel('Variable', { exact: true }).fill('LARGE_AMOUNT');
    await page.getByLabel('Value', { exact: true }).fill('lots');
    await page.getByRole('button', { name: 'Set variable' }).click();
    await confirm('Set variable');
    await page.getByRole('table', { name: 'Environment variables' }).getByText('lots').waitFor();
    await reef.call('POST', '/commands/withdraw/execute', { account_id: 'a1', amount: 50 });
    const facts = page.locator('dl.facts');
    await facts.getByText('LARGE_AMOUNT must be a whole number').waitFor({ timeout: 15_000 });
    await facts.getByText(/retrying in/).waitFor({ timeout: 15_000 });
    await facts.getByText('backoff', { exact: true }).waitFor();
    await screenshot(page, 'effect-backoff');
    // The overview lists it among the modules that need attention.
    await page.goto(reef.base + '/#/overview');
    await page.getByRole('link', { name: 'effect withdrawal-alert' }).click();
    await page.getByLabel('Value', { exact: true }).waitFor();
    await page.getByLabel('Variable', { exact: true }).fill('LARGE_AMOUNT');
    await page.getByLabel('Value', { exact: true }).fill('20');
    await page.getByRole('button', { name: 'Set variable' }).click();
    await confirm('Set variable');
    await facts.getByText('running').waitFor({ timeout: 15_000 });
    const alerts = await reef.call('POST', '/events/read', { query: { items: [{ types: ['LargeWithdrawalNoticed'] }] } });
    assert.equal(alerts.events.length, 1);
    assert.deepEqual(pageErrors, []);
  });

  test('deactivate and activate a version, after a confirmation', async () => {
    await page.goto(reef.base + '/#/modules/commands/deposit');
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await confirm('Deactivate');
    await page.locator('dl.facts').getByText('inactive').waitFor();
    await assert.rejects(reef.call('POST', '/commands/deposit/execute', { account_id: 'a1', amount: 1 }));
    await page.getByRole('button', { name: 'Activate version 1.0.0' }).click();
    await confirm('Activate');
    await page.locator('dl.facts').getByText('active', { exact: true }).waitFor();
    await reef.call('POST', '/commands/deposit/execute', { account_id: 'a1', amount: 1 });
  });
});
