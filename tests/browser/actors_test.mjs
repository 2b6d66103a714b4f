// The dashboard's actors pages in a real browser (issue 17, page 2): the list and its search,
// an actor's state changing after a send, the lifecycle buttons and the state repair with
// their confirmations, live logs.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { confirmDialog, screenshot, unlabelledControls, withDashboard } from './harness.mjs';

let reef;
let page;
const { pageErrors } = withDashboard({ bare: true }, async (session) => {
  ({ reef, page } = session);
});

const confirm = (label) => confirmDialog(page, label);

describe('actors', () => {
  // Bare NanoIDs (for the pages' URLs); the CLI gets them as `@${id}`, since an id may begin
  // with '-', which the CLI would read as an option.
  let counter;
  let greeter;
  before(async () => {
    counter = (await reef.cli('spawn', 'actors/counter', '0')).actor;
    greeter = (await reef.cli('spawn', 'actors/hello', '0')).actor;
  });

  test('the list shows every actor and the search narrows it', async () => {
    await page.goto(reef.base + '/#/actors');
    const table = page.getByRole('table', { name: 'Actors' });
    await table.getByText('@' + counter).waitFor();
    assert.equal(await table.locator('tbody tr').count(), 2);
    await page.getByLabel('Search').fill('hello');
    await page.getByRole('status').getByText('1 match').waitFor();
    assert.equal(await table.locator('tbody tr').count(), 1);
    assert.match(await table.locator('tbody tr').innerText(), /actors\/hello\s+idle/);
    await page.getByLabel('Search').fill('');
    assert.deepEqual(await unlabelledControls(page), []);
    // An actor spawned elsewhere appears without a reload.
    const third = (await reef.cli('spawn', 'actors/counter', '7')).actor;
    await table.getByText('@' + third).waitFor();
    await screenshot(page, 'actors');
  });

  test("an actor's page follows its state after a send and a tick", async () => {
    await page.getByRole('link', { name: '@' + counter }).click();
    await page.getByRole('heading', { name: '@' + counter }).waitFor();
    const state = page.locator('pre.json');
    await state.getByText('0').waitFor();
    await reef.cli('send', `@${counter}`, '{"op": "add", "value": 5}');
    // Queued: the mailbox shows the message until a tick runs it.
    await page.getByRole('table', { name: 'Mailbox' }).getByText('"value":5').waitFor();
    await reef.cli('tick', '1', '1000000');
    await state.getByText('5', { exact: true }).waitFor();
    await page.getByText('Empty.').waitFor();
    assert.deepEqual(pageErrors, []);
  });

  test('pause, set the state, resume, kill and restart, each after a confirmation', async () => {
    const facts = page.locator('dl.facts');
    await page.getByRole('button', { name: 'Pause' }).click();
    // Cancelling changes nothing.
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await facts.getByText('idle').waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await confirm('Pause');
    await facts.getByText('paused').waitFor();
    await page.getByLabel('New state (JSON)').fill('42');
    await page.getByRole('button', { name: 'Set state' }).click();
    await confirm('Set state');
    await page.locator('pre.json').getByText('42').waitFor();
    assert.equal((await reef.cli('inspect', `@${counter}`)).state, 42);
    await page.getByRole('button', { name: 'Resume' }).click();
    await confirm('Resume');
    await facts.getByText('idle').waitFor();
    await page.getByRole('button', { name: 'Kill' }).click();
    await confirm('Kill');
    await facts.getByText('stopped').waitFor();
    await page.getByRole('button', { name: 'Restart' }).click();
    await confirm('Restart');
    await facts.locator('div', { hasText: 'Incarnation' }).getByText('2').waitFor();
    await screenshot(page, 'actor');
    // Only what applies to its status can be pressed.
    assert.equal(await page.getByRole('button', { name: 'Resume' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Restart' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Set state' }).isDisabled(), true);
    // A refusal by the server says why, and changes nothing: the actor stops between the
    // page's last look and the click.
    await reef.cli('pause', `@${counter}`);
    await facts.getByText('paused').waitFor();
    await page.getByRole('button', { name: 'Pause' }).isDisabled();
    await reef.cli('kill', `@${counter}`);
    await facts.getByText('stopped').waitFor();
    await page.getByRole('button', { name: 'Remove' }).click();
    await reef.cli('restart', `@${counter}`);
    await confirm('Remove');
    await page.locator('.toast.bad').getByText(/stop or kill it/).waitFor();
    assert.equal((await reef.cli('inspect', `@${counter}`)).status, 'idle');
    assert.deepEqual(pageErrors, []);
  });

  test('logs arrive live while the page is open', async () => {
    await page.goto(`${reef.base}/#/actors/${greeter}`);
    await page.getByRole('heading', { name: '@' + greeter }).waitFor();
    await reef.cli('send', `@${greeter}`, '{"name": "Ada"}');
    await reef.cli('tick', '1', '1000000');
    await page.getByRole('list', { name: 'Log entries' }).getByText('hello, Ada!').waitFor();
    await page.locator('pre.json').getByText('1', { exact: true }).waitFor();
  });

  test('the actions are reachable by keyboard and the dialog takes the focus', async () => {
    await page.getByRole('button', { name: 'Pause' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Cancel');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal((await reef.cli('inspect', `@${greeter}`)).status, 'idle');
  });

  test('remove: the actor goes for good and the list no longer shows it', async () => {
    await reef.cli('kill', `@${greeter}`);
    await page.getByRole('button', { name: 'Remove' }).click();
    await confirm('Remove');
    await page.getByRole('heading', { name: 'Actors' }).waitFor();
    const table = page.getByRole('table', { name: 'Actors' });
    await table.getByText('@' + counter).waitFor();
    assert.equal(await table.getByText('@' + greeter).count(), 0);
    assert.deepEqual(pageErrors, []);
  });
});
