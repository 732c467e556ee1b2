// Browser test of the Launch screen on the test host: a workflow with a
// problem shows its diagnostic inline (line and message) and cannot start;
// a valid one can, and starting without a daemon explains that runs execute
// in weftd and offers to start it.
//
// Usage: npm run build && node tests/browser/launch.mjs
// Leaves a screenshot in test-results/launch.png.

import { join } from 'node:path';

import { check, resultsDir, suite } from './_harness.mjs';

await suite('launch', [
  [
    'a validation error shows inline and Start stays disabled; a valid workflow starts or explains the daemon',
    async (page, base, errors) => {
      await page.goto(`${base}#/launch`, { waitUntil: 'load' });
      const file = page.locator('input[name=workflow]');
      await file.fill('/home/me/flows/broken.fabro');
      const problems = page.getByLabel('Problems in the workflow');
      await problems.waitFor();
      const text = (await problems.textContent()) ?? '';
      check(text.includes('line 1:1') && text.includes('no exit node'), `diagnostic shown: ${text}`);
      const start = page.getByRole('button', { name: 'Start run' });
      check(await start.isDisabled(), 'Start is disabled while the workflow has errors');
      await page.screenshot({ path: join(resultsDir, 'launch.png') });

      await file.fill('/home/me/flows/release.fabro');
      await page.getByText('The workflow is valid.').waitFor();
      await page.locator('textarea[name=inputs]').fill('branch=main');
      check(!(await start.isDisabled()), 'Start is enabled for a valid workflow');
      await start.click();
      await page.getByRole('button', { name: 'Start the daemon and launch' }).waitFor();
      check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
    },
  ],
]);
