// Browser test of the run screen's Files Changed section, on the recorded
// git-checkpointed run (src/api/fixtures/recorded.json, recorded by
// tests/tests/it/ui_fixtures.rs in a scratch repository): the header shows
// the run branch and base commit, the whole run's patch shows as a file tree
// with badges beside a highlighted diff, split mode sets old beside new, a
// binary file is named not shown, and a stage's diff opens from the stage
// panel. Which run, files and stages to check is read from the fixtures.
//
// Usage: npm run build && node tests/browser/changes.mjs
// Leaves a screenshot in test-results/changes.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const view = fixtures?.views.find((v) => v.git && fixtures.changes?.[v.run.id]?.state === 'recorded');
const changedStage = view?.stages.find((s) => fixtures.changes[`${view.run.id}/${s.node_id}/${s.visit}`]?.state === 'recorded');
const at = (base, hash) => new URL(`index.html${hash}`, base).href;

/** Opens the run and waits for its whole patch to show. */
async function openChanges(page, base) {
  await page.goto(at(base, `#/run/${view.run.id}`), { waitUntil: 'load' });
  await page.getByRole('tablist', { name: 'Stage' }).getByRole('tab', { name: 'Files changed' }).click();
  const section = page.getByTestId('files-changed');
  await section.getByTestId('changes-totals').waitFor();
  return section;
}

await suite(
  'changes',
  [
    [
      "the run's patch shows as a tree of files beside a highlighted diff",
      view &&
        (async (page, base, errors) => {
          const section = await openChanges(page, base);
          const git = (await page.getByTestId('run-git').textContent()) ?? '';
          check(git.includes(view.git.run_branch) && git.includes(view.git.base_sha.slice(0, 8)), `the header names branch and base: ${git}`);
          const tree = section.getByTestId('changes-tree');
          const badges = await tree.locator('.changes__badge').allTextContents();
          for (const badge of ['A', 'M', 'D']) check(badges.includes(badge), `a ${badge} badge in the tree: ${badges}`);
          const diff = section.getByTestId('diff-view');
          check((await diff.locator('[data-row=binary]').count()) >= 1, 'the binary file is named');
          // highlight.js loads with the first diff (a dynamic import), so
          // the colours come a moment after the lines: wait for them.
          const highlighted = await diff
            .locator('.hljs-keyword')
            .first()
            .waitFor({ timeout: 30_000 })
            .then(() => true, () => false);
          check(highlighted, 'code is highlighted');
          await section.getByRole('tab', { name: 'Split' }).click();
          await diff.locator('[data-row=pair] .diff__side--del').first().waitFor();
          await section.scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(resultsDir, 'changes.png') });
          checkNoErrors(errors);
        }),
    ],
    [
      "a stage's diff opens from the stage panel",
      view &&
        changedStage &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${view.run.id}/node/${encodeURIComponent(changedStage.node_id)}`), { waitUntil: 'load' });
          await page.getByTestId('stage-changes-link').click();
          const section = page.getByTestId('files-changed');
          await page.waitForFunction(
            (want) => document.querySelector('[data-testid=files-changed]')?.getAttribute('data-source') === want,
            `${changedStage.node_id}@${changedStage.visit}`,
          );
          await section.getByTestId('changes-totals').waitFor();
          checkNoErrors(errors);
        }),
    ],
  ],
  { skipReason: 'the recorded fixtures hold no git-checkpointed run' },
);
