// Browser test of the run's checkpoint actions on the recorded history
// (src/api/fixtures/recorded.json), against the test host, which models
// weftd's `run.fork` and has no daemon for `run.apply`: "Fork from here" in
// a stage's Checkpoint menu opens the new run, cancelled, with its reason
// beside Resume; Apply… on the git-checkpointed run opens its dialog (merge
// by default) and shows the refusal of a missing daemon with "Start daemon".
//
// Usage: npm run build && node tests/browser/actions.mjs

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkNoErrors, check, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const ended = fixtures?.views.find((v) => ['succeeded', 'failed'].includes(v.run.status) && v.stages.some((s) => s.status === 'succeeded'));
const stage = ended?.stages.find((s) => s.status === 'succeeded');
const gitRun = fixtures?.views.find((v) => v.git && v.run.status === 'succeeded');
const at = (base, hash) => new URL(`index.html${hash}`, base).href;

await suite(
  'actions',
  [
    [
      "Fork from here opens the new run, waiting to be resumed",
      stage &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${ended.run.id}/node/${encodeURIComponent(stage.node_id)}`), { waitUntil: 'load' });
          const menu = page.getByTestId('stage-menu');
          await menu.locator('summary').click();
          await menu.getByTestId('fork-here').click();
          await page.waitForFunction((source) => {
            const id = document.querySelector('[data-testid=run-screen]')?.getAttribute('data-run-id');
            return !!id && id !== source;
          }, ended.run.id);
          const status = (await page.getByTestId('run-status').textContent()) ?? '';
          check(status.trim() === 'cancelled', `the new run waits, cancelled: ${status}`);
          const reason = (await page.getByTestId('run-stopped-reason').textContent()) ?? '';
          check(reason.includes(`forked from run ${ended.run.id} at ${stage.node_id}@${stage.visit}`), `its header says where it came from: ${reason}`);
          await page.getByTestId('run-header').getByRole('button', { name: 'Resume', exact: true }).waitFor();
          checkNoErrors(errors);
        }),
    ],
    [
      'Apply… opens its dialog and says the daemon is needed',
      gitRun &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${gitRun.run.id}`), { waitUntil: 'load' });
          await page.getByTestId('apply-run').click();
          const dialog = page.getByTestId('apply-dialog');
          check(await dialog.locator('input[value=merge]').isChecked(), 'merge is the default');
          await dialog.getByTestId('apply-confirm').click();
          const refused = dialog.getByTestId('apply-refused');
          await refused.waitFor();
          check((await refused.getAttribute('data-code')) === 'daemon.not_running', 'the test host has no daemon');
          await refused.getByRole('button', { name: 'Start daemon' }).waitFor();
          checkNoErrors(errors);
        }),
    ],
  ],
  { skipReason: 'the recorded fixtures hold no ended run with a stage that succeeded, or no git-checkpointed run' },
);
