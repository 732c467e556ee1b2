// Browser test of the runs list: serves the built UI (dist/) with `vite
// preview`, opens it in Debian's Chromium through playwright-core on the test
// host's recorded fixtures, and checks order, status chips, filters, search,
// the gates badge and banner, the start time's tooltip, opening a run, and
// that 10,000 synthetic runs (?runs=10000) stay virtualised and scroll.
//
// Usage: npm run build && node tests/browser/runs.mjs
// Leaves screenshots in test-results/runs*.png.

import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, suite } from './_harness.mjs';

/** The 10,000-run list must show within this: a generous functional bound
 * (the list is paged and virtualised), not a benchmark. */
const BIG_LIST_MS = 5_000;
/** Row elements in the DOM must stay under this however long the list is. */
const MAX_ROWS_IN_DOM = 200;

/** Workflow name and status of every rendered row, top to bottom. */
const rowsOf = (page) =>
  page.locator('[data-testid=run-row]').evaluateAll((rows) =>
    rows
      .map((r) => ({
        index: Number(r.dataset.index),
        id: r.dataset.runId,
        workflow: r.querySelector('.runs__workflow')?.textContent?.trim(),
        goal: r.querySelector('.runs__goal-text')?.textContent?.trim(),
        status: r.querySelector('[data-status]')?.getAttribute('data-status'),
        chip: r.querySelector('[data-status]')?.textContent?.trim(),
      }))
      .sort((a, b) => a.index - b.index),
  );

/** Waits until the total reads `n runs` (after a filter's debounce and fetch). */
const waitForTotal = (page, predicate) =>
  page.waitForFunction(
    (source) => {
      const text = document.querySelector('[data-testid=runs-total]')?.textContent ?? '';
      const n = Number(text.replace(/[^0-9]/g, ''));
      return text !== '' && new Function('n', `return ${source}`)(n);
    },
    predicate,
  );

const totalOf = async (page) =>
  Number(((await page.getByTestId('runs-total').textContent()) ?? '').replace(/[^0-9]/g, ''));

await suite(
  'runs',
  [
    [
      'recorded runs: newest first, status chips with text, gates badge and banner, absolute time on hover',
      async (page, base, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 11');
        const rows = await rowsOf(page);
        check(
          JSON.stringify(rows.map((r) => r.workflow)) ===
            JSON.stringify(['Ship', 'Publish', 'Tidy', 'Migrate', 'Checks', 'Refactor', 'Fix', 'Triage', 'Summarize', 'Deploy', 'Release']),
          `the recorded runs should be listed newest first, got ${rows.map((r) => r.workflow)}`,
        );
        for (const r of rows) {
          check(r.chip?.includes(r.status ?? '?'), `the ${r.workflow} chip should say its status in words (${r.chip})`);
        }
        check(
          rows[0]?.status === 'blocked' && rows[1]?.status === 'blocked' && rows[9]?.status === 'failed',
          'Ship and Publish are blocked and Deploy failed',
        );

        // Ship waits at a human gate, Publish on its agent's permission request.
        const badges = page.getByTestId('gates-badge');
        check((await badges.count()) === 2, `exactly two runs wait on a question, got ${await badges.count()} badges`);
        const badgeRows = await badges.evaluateAll((all) => all.map((b) => b.closest('[data-testid=run-row]')?.dataset.index));
        check(JSON.stringify(badgeRows) === '["0","1"]', `the badges should be on Ship and Publish (rows 0 and 1), got ${badgeRows}`);
        const banner = page.getByTestId('gates-banner');
        check((await banner.textContent())?.includes('2 runs waiting on you'), 'the banner counts the waiting runs');
        check((await banner.getAttribute('href')) === '#/gates', 'the banner links to the gates screen');

        const cost = await page.locator('[data-testid=run-row]', { hasText: 'Summarize' }).textContent();
        check(/\$0\.\d+/.test(cost ?? ''), `the prompt run shows its LLM cost: ${cost}`);

        const started = page.getByTestId('run-started').first();
        await started.hover();
        const title = await started.getAttribute('title');
        check(/\d{4}/.test(title ?? '') && /\d{2}:\d{2}:\d{2}/.test(title ?? ''), `the start time's title is an absolute time, got ${title}`);
        const shown = (await started.textContent())?.trim();
        check(shown !== title, 'the cell itself shows the relative time');
        await page.screenshot({ path: join(resultsDir, 'runs.png') });
        checkNoErrors(errors);
      },
    ],
    [
      'filter by status, filter by workflow, search a goal word',
      async (page, base, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 11');
        await page.getByTestId('runs-status').selectOption('failed');
        await waitForTotal(page, 'n === 1');
        let rows = await rowsOf(page);
        check(rows.length === 1 && rows.every((r) => r.status === 'failed'), `only failed runs: ${JSON.stringify(rows)}`);
        await page.screenshot({ path: join(resultsDir, 'runs-failed.png') });

        await page.getByTestId('runs-status').selectOption('');
        await waitForTotal(page, 'n === 11');
        await page.getByTestId('runs-workflow').selectOption('Release');
        await waitForTotal(page, 'n === 1');
        rows = await rowsOf(page);
        check(rows[0]?.workflow === 'Release', `the workflow filter keeps Release only: ${JSON.stringify(rows)}`);
        await page.getByTestId('runs-workflow').selectOption('');
        await waitForTotal(page, 'n === 11');

        await page.getByTestId('runs-search').fill('orders');
        await waitForTotal(page, 'n === 1');
        rows = await rowsOf(page);
        check(rows.length === 1 && rows[0]?.goal?.includes('orders'), `search narrows to the goal: ${JSON.stringify(rows)}`);
        await page.getByTestId('runs-search').fill('zzz-no-such-run');
        await page.getByTestId('runs-empty').waitFor();
        check((await page.getByTestId('runs-empty').textContent())?.includes('No runs match'), 'an empty result says so');
        checkNoErrors(errors);
      },
    ],
    [
      'clicking a row, and Enter on the keyboard selection, opens the run',
      async (page, base, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 11');
        const row = page.locator('[data-testid=run-row]', { hasText: 'Deploy' });
        const id = await row.getAttribute('data-run-id');
        await row.click();
        await page.waitForFunction((want) => window.location.hash === want, `#/run/${id}`);

        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 11');
        await page.getByTestId('runs-list').focus();
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('ArrowDown');
        const selected = page.locator('[data-testid=run-row][aria-selected=true]');
        check((await selected.getAttribute('data-index')) === '2', 'two arrow presses select the third run');
        const third = await selected.getAttribute('data-run-id');
        await page.keyboard.press('Enter');
        await page.waitForFunction((want) => window.location.hash === want, `#/run/${third}`);
        checkNoErrors(errors);
      },
    ],
    [
      '10,000 runs: shown fast, virtualised, scrolls to the end',
      async (page, base, errors) => {
        const t0 = Date.now();
        await page.goto(`${base}?runs=10000#/runs`, { waitUntil: 'load' });
        await page.locator('[data-testid=run-row]').first().waitFor({ timeout: BIG_LIST_MS });
        // Every 40th synthetic run is archived: hidden until asked for.
        await waitForTotal(page, 'n >= 9700 && n < 10000');
        const took = Date.now() - t0;
        const unarchived = await totalOf(page);
        await page.getByTestId('runs-show-archived').check();
        await waitForTotal(page, 'n >= 10000');
        const total = await totalOf(page);
        check(total >= 10_000, `the total should count every run, got ${total}`);
        check(total - unarchived === Math.floor(10_000 / 40), `archived runs hidden by default: ${unarchived} of ${total}`);
        check(took < BIG_LIST_MS, `the list took ${took} ms to appear`);

        const rowsInDom = await page.locator('[data-testid=run-row]').count();
        check(rowsInDom > 0 && rowsInDom < MAX_ROWS_IN_DOM, `only visible rows are rendered, got ${rowsInDom}`);

        const list = page.getByTestId('runs-list');
        await list.evaluate((el) => {
          el.scrollTop = el.scrollHeight;
        });
        await page.waitForFunction(
          (last) => document.querySelector(`[data-testid=run-row][data-index="${last}"]`) !== null,
          total - 1,
        );
        const afterScroll = await page.locator('[data-testid=run-row]').count();
        check(afterScroll < MAX_ROWS_IN_DOM, `still bounded at the bottom, got ${afterScroll}`);
        const bottomVisible = await list.evaluate((el, last) => {
          const row = el.querySelector(`[data-index="${last}"]`);
          if (!row) return false;
          const a = el.getBoundingClientRect();
          const b = row.getBoundingClientRect();
          return b.bottom <= a.bottom + 1 && b.top >= a.top - 1;
        }, total - 1);
        check(bottomVisible, 'the last run is visible at the bottom of the list');
        await page.screenshot({ path: join(resultsDir, 'runs-10k.png') });
        console.log(`  10,000 runs: list shown in ${took} ms (navigation to first rows), ${rowsInDom} rows in the DOM`);
        checkNoErrors(errors);
      },
    ],
  ],
);
