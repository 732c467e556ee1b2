// Browser test of the run screen's panes: dragging the splitter between the
// graph and the stage panel resizes the graph, and the width is kept over a
// reload (localStorage `weft.layout.run.*`); the bar's splitter and
// collapse button do the same for the run bar; a deep-link hash opens the
// stage, visit and tab it names, and clicking a tab rewrites the hash; a
// narrow window stacks the panes.
// Which run to open is read from the fixtures (src/api/fixtures/recorded.json).
//
// Usage: npm run build && node tests/browser/panes.mjs
// Leaves screenshots in test-results/panes*.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const view = fixtures?.views.find((v) => v.run.status === 'failed' && v.stages.some((s) => s.status === 'failed'));
const routed = view && [...view.stages].sort((a, b) => a.rank - b.rank).find((s) => s.handler !== 'start');

const at = (base, hash) => new URL(`index.html${hash}`, base).href;
const graphWidth = (page) => page.getByTestId('graph-pane').evaluate((e) => Math.round(e.getBoundingClientRect().width));

await suite(
  'panes',
  [
    [
      'dragging the splitter resizes the graph, and a reload keeps the width',
      view &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/run/${view.run.id}`), { waitUntil: 'load' });
          await page.evaluate(() => window.localStorage.clear());
          await page.reload({ waitUntil: 'load' });
          const splitter = page.getByTestId('graph-splitter');
          await splitter.waitFor();
          const before = await graphWidth(page);
          const box = await splitter.boundingBox();
          check(box !== null, 'the splitter is laid out');
          const x = box.x + box.width / 2;
          const y = box.y + box.height / 2;
          await page.mouse.move(x, y);
          await page.mouse.down();
          // In steps, as a hand drags: the width follows the pointer.
          await page.mouse.move(x - 60, y, { steps: 5 });
          await page.mouse.move(x - 120, y, { steps: 5 });
          await page.mouse.up();
          const after = await graphWidth(page);
          check(Math.abs(after - (before - 120)) <= 2, `the graph is 120 px narrower (${before} → ${after})`);
          check((await splitter.getAttribute('aria-valuenow')) === String(after), 'the splitter reports the new width');
          await page.screenshot({ path: join(resultsDir, 'panes.png') });
          await page.reload({ waitUntil: 'load' });
          await page.getByTestId('graph-splitter').waitFor();
          const reloaded = await graphWidth(page);
          check(reloaded === after, `the width is kept over a reload (${after} → ${reloaded})`);
          // The keyboard resizes it too.
          await page.getByTestId('graph-splitter').focus();
          await page.keyboard.press('ArrowRight');
          check((await graphWidth(page)) === after + 24, 'ArrowRight widens the graph by a step');
          checkNoErrors(errors);
        }),
    ],
    [
      'the run bar resizes, collapses and stays so over a reload',
      view &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/run/${view.run.id}/events`), { waitUntil: 'load' });
          const body = page.locator('#run-bar-body');
          await page.getByTestId('event-alerts').waitFor();
          const height = () => body.evaluate((e) => Math.round(e.getBoundingClientRect().height));
          const before = await height();
          await page.getByTestId('bar-splitter').scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(resultsDir, 'panes-bar.png') });
          const box = await page.getByTestId('bar-splitter').boundingBox();
          await page.mouse.move(box.x + 40, box.y + box.height / 2);
          await page.mouse.down();
          await page.mouse.move(box.x + 40, box.y + box.height / 2 - 80, { steps: 8 });
          await page.mouse.up();
          const after = await height();
          check(Math.abs(after - (before + 80)) <= 2, `dragging up makes the bar 80 px taller (${before} → ${after})`);
          await page.getByTestId('bar-toggle').click();
          check(await body.isHidden(), 'the bar collapses');
          // Opened afresh (a hash naming a bar tab would open the bar again).
          await page.goto(at(base, `#/run/${view.run.id}`), { waitUntil: 'load' });
          await page.reload({ waitUntil: 'load' });
          await page.getByTestId('bar-toggle').waitFor();
          check(await page.locator('#run-bar-body').isHidden(), 'the bar stays collapsed over a reload');
          await page.getByRole('tab', { name: 'Timeline' }).click();
          await page.getByTestId('timeline').waitFor();
          check((await height()) === after, 'and opens again at the height it had');
          await page.evaluate(() => window.localStorage.clear());
          checkNoErrors(errors);
        }),
    ],
    [
      'a deep link opens its stage and tab, and a tab click rewrites the hash',
      routed &&
        (async (page, base, errors) => {
          const node = encodeURIComponent(routed.node_id);
          await page.goto(at(base, `#/run/${view.run.id}/stage/${node}@${routed.visit}/routing`), { waitUntil: 'load' });
          const stagePanel = page.getByTestId('stage-detail');
          await page.waitForFunction((want) => document.querySelector('[data-testid=stage-detail]')?.getAttribute('data-node') === want, routed.node_id);
          const tabs = stagePanel.getByRole('tablist', { name: 'Stage' });
          check((await tabs.getByRole('tab', { selected: true }).textContent()) === 'Routing', 'the Routing tab is open');
          await tabs.getByRole('tab', { name: 'Context' }).click();
          await page.waitForFunction(
            (want) => window.location.hash === want,
            `#/run/${view.run.id}/stage/${node}@${routed.visit}/context`,
          );
          await page.getByTestId('context-panel').waitFor();
          await page.evaluate(() => window.localStorage.clear());
          checkNoErrors(errors);
        }),
    ],
    [
      'in a window narrower than 900 px the panes stack, the graph above the stage panel',
      view &&
        (async (page, base, errors) => {
          await page.setViewportSize({ width: 760, height: 800 });
          await page.goto(at(base, `#/run/${view.run.id}`), { waitUntil: 'load' });
          const graph = page.getByTestId('graph-pane');
          const stagePanel = page.getByTestId('stage-detail');
          await stagePanel.waitFor();
          const g = await graph.boundingBox();
          const p = await stagePanel.boundingBox();
          check(g !== null && p !== null, 'both panes are laid out');
          check(p.y >= g.y + g.height - 1, `the stage panel is below the graph (graph ${g.y}+${g.height}, panel ${p.y})`);
          check(Math.abs(g.width - p.width) < 40, `both take the width (${g.width} and ${p.width})`);
          check(await page.getByTestId('graph-splitter').isHidden(), 'the splitter is hidden');
          await page.setViewportSize({ width: 1280, height: 800 });
          checkNoErrors(errors);
        }),
    ],
  ],
  { skipReason: 'no failed run in the fixtures' },
);
