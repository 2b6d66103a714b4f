// The dashboard's programs page in a real browser (issue 17, page 5), on the example program:
// the program and its generation, units with their counters, a unit's instances, and a
// reactor drained from the page.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { confirmDialog, screenshot, unlabelledControls, withDashboard } from './harness.mjs';

let reef;
let page;
const { pageErrors } = withDashboard({}, async (session) => {
  ({ reef, page } = session);
});

describe('programs and units', () => {
  test('the program, its units and their counters', async () => {
    for (let i = 0; i < 3; ++i) await reef.call('POST', '/units/counter/invoke', { op: 'add' });
    await page.goto(reef.base + '/#/programs');
    await page.getByText('counter-demo').waitFor();
    const units = page.getByRole('table', { name: 'Units' });
    await units.getByText('counter_handle').count();
    assert.match(await units.locator('tbody tr', { hasText: 'counter' }).first().innerText(),
      /counter\s+counter\s+singleton \(up to 1\)\s+1\s+256\s+3\s+0\s+0\s+0/);
    assert.deepEqual(await unlabelledControls(page), []);
  });

  test("a unit's instances, with their state of work", async () => {
    await page.getByRole('button', { name: 'counter', exact: true }).click();
    const instances = page.getByRole('table', { name: 'Instances of counter' });
    await instances.waitFor();
    assert.match(await instances.locator('tbody tr').innerText(), /#1\s+idle\s+#\d\s+1\s+0\s+3/);
    await screenshot(page, 'programs');
  });

  test('draining a reactor moves its instances away', async () => {
    const reactors = page.getByRole('table', { name: 'Reactors' });
    await page.getByRole('button', { name: 'Drain reactor 0' }).click();
    await confirmDialog(page, 'Drain');
    await reactors.locator('tbody tr', { hasText: '#0' }).getByText('down').waitFor();
    // The last Up reactor cannot be drained: its button is gone.
    assert.equal(await page.getByRole('button', { name: 'Drain reactor 1' }).count(), 0);
    const answer = await reef.call('GET', '/units/counter/instances');
    assert.equal(answer.instances[0].reactor, 1);
    assert.deepEqual(pageErrors, []);
  });
});
