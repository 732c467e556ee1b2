// Browser test of the runs list: serves the built UI (dist/) with `vite
// preview`, opens it in Debian's Chromium through playwright-core on the test
// host's recorded fixtures, and checks order, status chips, filters, search,
// the gates badge and banner, the start time's tooltip, opening a run, and
// that 10,000 synthetic runs (?runs=10000) stay virtualised and scroll.
//
// Usage: npm run build && node tests/browser/runs.mjs
// Leaves screenshots in test-results/runs*.png.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import { preview } from 'vite';

const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const resultsDir = join(uiDir, 'test-results');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 15_000;
const WHOLE_TEST_TIMEOUT_MS = 120_000;
/** The 10,000-run list must show within this: a generous functional bound
 * (the list is paged and virtualised), not a benchmark. */
const BIG_LIST_MS = 5_000;
/** Row elements in the DOM must stay under this however long the list is. */
const MAX_ROWS_IN_DOM = 200;

let passed = 0;
let failed = 0;

function bail(message) {
  console.error(`browser runs: FAILED: ${message}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}

if (!existsSync(join(uiDir, 'dist', 'index.html'))) {
  bail('ui/dist/index.html is missing; run `npm run build` first');
}
if (!existsSync(CHROMIUM)) {
  bail(`no Chromium at ${CHROMIUM}; install Debian's chromium package (or set CHROMIUM)`);
}

// A hung browser or server must not hang `make test`.
const watchdog = setTimeout(() => bail(`no result after ${WHOLE_TEST_TIMEOUT_MS / 1000} s`), WHOLE_TEST_TIMEOUT_MS);

function check(condition, why) {
  if (!condition) throw new Error(why);
}

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

let server;
let context;
let profileDir;
try {
  server = await preview({
    root: uiDir,
    logLevel: 'warn',
    preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false },
  });
  const base = server.resolvedUrls?.local[0];
  if (!base) throw new Error('vite preview did not report a URL');

  profileDir = await mkdtemp(join(tmpdir(), 'weft-ui-chromium-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    timeout: STEP_TIMEOUT_MS,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  await mkdir(resultsDir, { recursive: true });

  const tests = [
    [
      'recorded runs: newest first, status chips with text, gates badge and banner, absolute time on hover',
      async (page, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 6');
        const rows = await rowsOf(page);
        check(
          JSON.stringify(rows.map((r) => r.workflow)) ===
            JSON.stringify(['Ship', 'Migrate', 'Checks', 'Summarize', 'Deploy', 'Release']),
          `the recorded runs should be listed newest first, got ${rows.map((r) => r.workflow)}`,
        );
        for (const r of rows) {
          check(r.chip?.includes(r.status ?? '?'), `the ${r.workflow} chip should say its status in words (${r.chip})`);
        }
        check(rows[0]?.status === 'blocked' && rows[4]?.status === 'failed', 'Ship is blocked and Deploy failed');

        const badges = page.getByTestId('gates-badge');
        check((await badges.count()) === 1, `exactly one run waits at a gate, got ${await badges.count()} badges`);
        const badgeRow = await badges.first().evaluate((b) => b.closest('[data-testid=run-row]')?.dataset.index);
        check(badgeRow === '0', `the badge should be on the Ship run (row 0), got row ${badgeRow}`);
        const banner = page.getByTestId('gates-banner');
        check((await banner.textContent())?.includes('1 run waiting on you'), 'the banner counts the waiting run');
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
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
    [
      'filter by status, filter by workflow, search a goal word',
      async (page, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 6');
        await page.getByTestId('runs-status').selectOption('failed');
        await waitForTotal(page, 'n === 1');
        let rows = await rowsOf(page);
        check(rows.length === 1 && rows.every((r) => r.status === 'failed'), `only failed runs: ${JSON.stringify(rows)}`);
        await page.screenshot({ path: join(resultsDir, 'runs-failed.png') });

        await page.getByTestId('runs-status').selectOption('');
        await waitForTotal(page, 'n === 6');
        await page.getByTestId('runs-workflow').selectOption('Release');
        await waitForTotal(page, 'n === 1');
        rows = await rowsOf(page);
        check(rows[0]?.workflow === 'Release', `the workflow filter keeps Release only: ${JSON.stringify(rows)}`);
        await page.getByTestId('runs-workflow').selectOption('');
        await waitForTotal(page, 'n === 6');

        await page.getByTestId('runs-search').fill('orders');
        await waitForTotal(page, 'n === 1');
        rows = await rowsOf(page);
        check(rows.length === 1 && rows[0]?.goal?.includes('orders'), `search narrows to the goal: ${JSON.stringify(rows)}`);
        await page.getByTestId('runs-search').fill('zzz-no-such-run');
        await page.getByTestId('runs-empty').waitFor();
        check((await page.getByTestId('runs-empty').textContent())?.includes('No runs match'), 'an empty result says so');
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
    [
      'clicking a row, and Enter on the keyboard selection, opens the run',
      async (page, errors) => {
        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 6');
        const row = page.locator('[data-testid=run-row]', { hasText: 'Deploy' });
        const id = await row.getAttribute('data-run-id');
        await row.click();
        await page.waitForFunction((want) => window.location.hash === want, `#/runs/${id}`);

        await page.goto(`${base}#/runs`, { waitUntil: 'load' });
        await waitForTotal(page, 'n === 6');
        await page.getByTestId('runs-list').focus();
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('ArrowDown');
        const selected = page.locator('[data-testid=run-row][aria-selected=true]');
        check((await selected.getAttribute('data-index')) === '2', 'two arrow presses select the third run');
        const third = await selected.getAttribute('data-run-id');
        await page.keyboard.press('Enter');
        await page.waitForFunction((want) => window.location.hash === want, `#/runs/${third}`);
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
    [
      '10,000 runs: shown fast, virtualised, scrolls to the end',
      async (page, errors) => {
        const t0 = Date.now();
        await page.goto(`${base}?runs=10000#/runs`, { waitUntil: 'load' });
        await page.locator('[data-testid=run-row]').first().waitFor({ timeout: BIG_LIST_MS });
        await waitForTotal(page, 'n >= 10000');
        const took = Date.now() - t0;
        const total = await totalOf(page);
        check(total >= 10_000, `the total should count every run, got ${total}`);
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
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
  ];

  for (const [name, run] of tests) {
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    try {
      await run(page, errors);
      passed += 1;
      console.log(`browser runs: ok: ${name}`);
    } catch (e) {
      failed += 1;
      console.error(`browser runs: FAILED: ${name}: ${e instanceof Error ? e.message : String(e)}`);
      await page.screenshot({ path: join(resultsDir, 'runs-failure.png') }).catch(() => {});
    } finally {
      await page.close().catch(() => {});
    }
  }
} catch (e) {
  failed += 1;
  console.error(`browser runs: FAILED: ${e instanceof Error ? e.message : String(e)}`);
} finally {
  clearTimeout(watchdog);
  await context?.close().catch(() => {});
  await server?.close().catch(() => {});
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
