// Browser test of the run screen and the gates inbox: serves the built UI
// (dist/) with `vite preview`, opens it in Debian's Chromium through
// playwright-core against the test host, and drives it with the recorded
// fixtures (src/api/fixtures/recorded.json): a failed run shows what failed
// and why and colours its failed node, a pending question is answered by
// click and (after a reload, which resets the test host) by its accelerator
// key, #/gates lists it, an external agent's permission request shows as
// one (kind, paths, command, allow/reject buttons) in the inbox and on its
// run, and every timeline bar's name reads in full. Which runs to open is read from the fixtures, so
// regenerated fixtures need no edit here.
//
// Usage: npm run build && node tests/browser/run.mjs
// Leaves screenshots in test-results/run*.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');

/** The accelerator key of an option label (`[A] Approve` → `A`), as the engine parses it. */
function acceleratorOf(label) {
  const m = /^\s*(?:\[([\p{L}\p{N}]{1,3})\]|([\p{L}\p{N}]{1,3})\)|([\p{L}\p{N}]{1,3})\s+-\s)\s*\S/u.exec(label);
  return m ? (m[1] ?? m[2] ?? m[3]) : null;
}

// What the page's test host serves: chosen from the fixtures, not hard-coded.
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const failedView = fixtures?.views.find((v) => v.run.status === 'failed' && v.stages.some((s) => s.status === 'failed'));
const failedStage = failedView && [...failedView.stages].sort((a, b) => b.rank - a.rank).find((s) => s.status === 'failed');
const question = fixtures?.questions.find((q) => q.status === 'pending' && !q.permission && q.options.length >= 2);
const permissionQuestion = fixtures?.questions.find((q) => q.status === 'pending' && q.permission);

const runsWithStages = fixtures?.views.filter((v) => v.stages.length > 0) ?? [];

/**
 * Timeline bars whose name does not read in full as drawn: a name must sit
 * wholly inside its bar, or beside it within the track and clear of the
 * other bars, or be hidden with the bar's tooltip and accessible name
 * giving node, attempt, status and duration.
 */
const unreadableBars = (page) =>
  page.evaluate(() => {
    const out = [];
    const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5;
    const apart = (a, b) => a.right <= b.left || b.right <= a.left;
    for (const track of document.querySelectorAll('[data-testid=timeline] .timeline__track')) {
      const trackBox = track.getBoundingClientRect();
      const bars = [...track.querySelectorAll('.timeline__bar')];
      for (const bar of bars) {
        const title = bar.getAttribute('title') ?? '';
        const name = `${bar.dataset.node}: ${title}`;
        if (!/attempt \d+: \w+, .+/.test(title) || bar.getAttribute('aria-label') !== title) {
          out.push(`${name}: the tooltip and accessible name should give node, attempt, status and duration`);
        }
        const label = bar.querySelector('span');
        if (!label || label.getClientRects().length === 0) continue;
        const box = label.getBoundingClientRect();
        const barBox = bar.getBoundingClientRect();
        if (inside(box, barBox)) continue;
        if (!inside(box, trackBox)) out.push(`${name}: its name runs out of the lane`);
        else if (!bars.every((other) => apart(box, other.getBoundingClientRect()))) out.push(`${name}: its name is clipped or covers a bar`);
      }
    }
    return out;
  });

const waitForGraph = (page) =>
  page.waitForFunction(() => document.querySelector('[data-testid=graph-canvas] svg g.node') !== null);

/** The page at `hash` on the server at `base`. */
const at = (base, hash) => new URL(`index.html${hash}`, base).href;

await suite(
  'run',
  [
    [
      'an unknown run says so, with the daemon stopped',
      async (page, base, errors) => {
        await page.goto(at(base, '#/runs/NO-SUCH-RUN'), { waitUntil: 'load' });
        await page.getByText('No run matches “NO-SUCH-RUN”.').waitFor();
        checkNoErrors(errors);
      },
    ],
    [
      'a failed run: what failed and why, the failed node coloured, jump to the stage',
      failedStage &&
        (async (page, base, errors) => {
          const reason = failedStage.failure_reason ?? '';
          await page.goto(at(base, `#/runs/${failedView.run.id}`), { waitUntil: 'load' });
          const summary = page.getByTestId('failure-summary');
          await summary.waitFor();
          const text = (await summary.textContent()) ?? '';
          check(text.includes(`Failed at ${failedStage.node_id}`), `the summary should name ${failedStage.node_id} (got ${JSON.stringify(text)})`);
          check(text.includes(reason), `the summary should give the stage's reason ${JSON.stringify(reason)} (got ${JSON.stringify(text)})`);
          await waitForGraph(page);
          const node = page.locator(`g.node[data-node-id="${failedStage.node_id}"]`);
          await page.waitForFunction(
            (id) => document.querySelector(`g.node[data-node-id="${id}"]`)?.getAttribute('data-state') === 'failed',
            failedStage.node_id,
          );
          check((await node.getAttribute('data-state')) === 'failed', 'the failed node should have data-state="failed"');
          // Select another stage from the graph, then jump back with the summary's button.
          const other = failedView.stages.find((s) => s.node_id !== failedStage.node_id);
          if (other) {
            await page.locator(`g.node[data-node-id="${other.node_id}"]`).click();
            await page.waitForFunction((id) => document.querySelector('[data-testid=stage-detail]')?.getAttribute('data-node') === id, other.node_id);
          }
          await page.getByTestId('jump-to-failure').click();
          await page.waitForFunction((id) => document.querySelector('[data-testid=stage-detail]')?.getAttribute('data-node') === id, failedStage.node_id);
          // History shows while the test host has no daemon; live actions explain.
          const live = (await page.getByTestId('live-state').textContent()) ?? '';
          check(live.length > 0, 'the header should say whether the view is live');
          await page.getByRole('button', { name: 'Re-run with the same inputs' }).click();
          await page.getByTestId('daemon-down').waitFor();
          check(
            (await page.getByTestId('daemon-down').getByRole('button', { name: 'Start daemon' }).count()) === 1,
            'a stopped daemon should come with a Start daemon button',
          );
          await page.screenshot({ path: join(resultsDir, 'run-failed.png'), fullPage: true });
          checkNoErrors(errors);
        }),
    ],
    [
      'a pending question: shown from the route, the gate waiting, answered by click',
      question &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${question.run_id}/question/${question.id}`), { waitUntil: 'load' });
          const panel = page.getByTestId('question-panel');
          await panel.waitFor();
          check(((await page.getByTestId('question-text').textContent()) ?? '') === question.text, 'the panel should show the question text');
          await waitForGraph(page);
          await page.waitForFunction(
            (id) => document.querySelector(`g.node[data-node-id="${id}"]`)?.getAttribute('data-state') === 'waiting',
            question.node_id,
          );
          const option = panel.locator('.question__option').first();
          await option.click();
          const done = panel.getByTestId('action-done');
          await done.waitFor();
          const shown = (await done.textContent()) ?? '';
          check(shown.startsWith('Answered:'), `clicking an option should answer it (got ${JSON.stringify(shown)})`);
          check(await option.isDisabled(), 'an answered question should not take a second answer');
          await page.screenshot({ path: join(resultsDir, 'run-question.png'), fullPage: true });
          checkNoErrors(errors);
        }),
    ],
    [
      'a pending question answered by its accelerator key',
      question &&
        (async (page, base, errors) => {
          // The second option, so this cannot pass by answering the first.
          const label = question.options[1];
          const key = acceleratorOf(label) ?? '2';
          await page.goto(at(base, `#/runs/${question.run_id}`), { waitUntil: 'load' });
          const panel = page.getByTestId('question-panel');
          await panel.waitFor();
          await page.keyboard.press(key.length === 1 ? key.toLowerCase() : '2');
          const done = panel.getByTestId('action-done');
          await done.waitFor();
          const shown = (await done.textContent()) ?? '';
          const text = label.replace(/^\s*(\[[^\]]+\]|[^)\s]+\)|\S+\s+-)\s*/, '');
          check(shown === `Answered: ${text}`, `pressing ${key} should answer “${text}” (got ${JSON.stringify(shown)})`);
          checkNoErrors(errors);
        }),
    ],
    [
      'every timeline bar reads in full: its name inside, beside it, or in its tooltip',
      runsWithStages.length > 0 &&
        (async (page, base, errors) => {
          for (const view of runsWithStages) {
            await page.goto(at(base, `#/runs/${view.run.id}`), { waitUntil: 'load' });
            await page.locator('[data-testid=timeline] .timeline__bar').first().waitFor();
            const bad = await unreadableBars(page);
            check(bad.length === 0, `run ${view.run.id} (${view.run.workflow_name}):\n  ${bad.join('\n  ')}`);
          }
          await page.getByTestId('timeline').screenshot({ path: join(resultsDir, 'run-timeline.png') });
          checkNoErrors(errors);
        }),
    ],
    [
      'the gates inbox lists the pending question with its run',
      question &&
        (async (page, base, errors) => {
          await page.goto(at(base, '#/gates'), { waitUntil: 'load' });
          const panel = page.locator(`[data-testid=question-panel][data-question-id="${question.id}"]`);
          await panel.waitFor();
          check(((await panel.getByTestId('question-text').textContent()) ?? '') === question.text, 'the inbox should show the question text');
          const href = await panel.locator('.question__run').getAttribute('href');
          check(href === `#/run/${question.run_id}/question/${question.id}`, `the inbox should link to the run's question (got ${href})`);
          check((await panel.locator('.question__option').count()) === question.options.length, 'every option should be a button');
          await page.screenshot({ path: join(resultsDir, 'run-gates.png'), fullPage: true });
          await panel.locator('.question__run').click();
          await page.getByTestId('run-screen').waitFor();
          checkNoErrors(errors);
        }),
    ],
    [
      'an agent\'s permission request: kind, paths and command shown, options styled allow/reject, answered on its run',
      permissionQuestion &&
        (async (page, base, errors) => {
          const p = permissionQuestion.permission;
          await page.goto(at(base, '#/gates'), { waitUntil: 'load' });
          const panel = page.locator(`[data-testid=question-panel][data-question-id="${permissionQuestion.id}"]`);
          await panel.waitFor();
          check(await panel.evaluate((el) => el.classList.contains('question--permission')), 'the panel should be styled as a permission request');
          check(((await panel.getByTestId('permission-kind').textContent()) ?? '') === p.tool_kind, 'the badge should name the kind of call');
          const paths = await panel.getByTestId('permission-paths').locator('li').allTextContents();
          check(JSON.stringify(paths) === JSON.stringify(p.locations), `the paths should be listed (got ${JSON.stringify(paths)})`);
          if (p.command) {
            const command = (await panel.getByTestId('permission-command').textContent()) ?? '';
            check(command === `$ ${p.command}`, `the command should be shown (got ${JSON.stringify(command)})`);
          }
          // The code block is bounded: it scrolls instead of growing past its cap.
          const maxHeight = await panel.locator('.permission__code').first().evaluate((el) => getComputedStyle(el).maxHeight);
          check(maxHeight.endsWith('px'), `the command's block should have a bounded height (got ${maxHeight})`);
          const kinds = await panel.locator('.question__option').evaluateAll((all) => all.map((b) => [b.dataset.kind, b.className]));
          check(kinds.length === p.options.length, 'every option should be a button');
          for (const [kind, cls] of kinds) {
            const tone = kind?.startsWith('allow') ? 'allow' : kind?.startsWith('reject') ? 'reject' : null;
            check(tone !== null && cls.includes(`question__option--${tone}`), `option ${kind} should be styled ${tone} (${cls})`);
          }
          const allowBorder = await panel.locator('.question__option--allow').first().evaluate((el) => getComputedStyle(el).borderColor);
          const rejectBorder = await panel.locator('.question__option--reject').first().evaluate((el) => getComputedStyle(el).borderColor);
          check(allowBorder !== rejectBorder, `allow and reject should look different (${allowBorder} vs ${rejectBorder})`);
          await panel.screenshot({ path: join(resultsDir, 'run-permission.png') });

          await page.goto(at(base, `#/runs/${permissionQuestion.run_id}/question/${permissionQuestion.id}`), { waitUntil: 'load' });
          const onRun = page.getByTestId('question-panel');
          await onRun.waitFor();
          check((await onRun.getAttribute('data-permission')) === p.tool_kind, 'the run screen should show it as a permission request');
          const reject = onRun.locator('.question__option--reject').first();
          const label = (await reject.textContent()) ?? '';
          await reject.click();
          const done = onRun.getByTestId('action-done');
          await done.waitFor();
          const shown = (await done.textContent()) ?? '';
          check(label.endsWith(shown.replace('Answered: ', '')), `clicking Reject should answer it (got ${JSON.stringify(shown)})`);
          checkNoErrors(errors);
        }),
    ],
  ],
  {
    viewport: { width: 1280, height: 900 },
    fullPageFailure: true,
    skipReason: `no recorded fixtures: ${fixtures ? 'the fixtures have no such run' : `${fixturesPath} is missing`}`,
  },
);
