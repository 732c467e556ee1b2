// Browser test of the run screen and the gates inbox: serves the built UI
// (dist/) with `vite preview`, opens it in Debian's Chromium through
// playwright-core against the test host, and drives it with the recorded
// fixtures (src/api/fixtures/recorded.json): a failed run shows what failed
// and why and colours its failed node, a pending question is answered by
// click and (after a reload, which resets the test host) by its accelerator
// key, and #/gates lists it. Which runs to open is read from the fixtures, so
// regenerated fixtures need no edit here.
//
// Usage: npm run build && node tests/browser/run.mjs
// Leaves screenshots in test-results/run*.png.

import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import { preview } from 'vite';

const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const resultsDir = join(uiDir, 'test-results');
const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 15_000;
const WHOLE_TEST_TIMEOUT_MS = 120_000;

let passed = 0;
let failed = 0;
let skipped = 0;

function bail(message) {
  console.error(`browser run: FAILED: ${message}`);
  console.log(`${passed} passed, ${failed + 1} failed, ${skipped} skipped`);
  process.exit(1);
}

if (!existsSync(join(uiDir, 'dist', 'index.html'))) bail('ui/dist/index.html is missing; run `npm run build` first');
if (!existsSync(CHROMIUM)) bail(`no Chromium at ${CHROMIUM}; install Debian's chromium package (or set CHROMIUM)`);

const watchdog = setTimeout(() => bail(`no result after ${WHOLE_TEST_TIMEOUT_MS / 1000} s`), WHOLE_TEST_TIMEOUT_MS);

function check(condition, why) {
  if (!condition) throw new Error(why);
}

/** The accelerator key of an option label (`[A] Approve` → `A`), as the engine parses it. */
function acceleratorOf(label) {
  const m = /^\s*(?:\[([\p{L}\p{N}]{1,3})\]|([\p{L}\p{N}]{1,3})\)|([\p{L}\p{N}]{1,3})\s+-\s)\s*\S/u.exec(label);
  return m ? (m[1] ?? m[2] ?? m[3]) : null;
}

// What the page's test host serves: chosen from the fixtures, not hard-coded.
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const failedView = fixtures?.views.find((v) => v.run.status === 'failed' && v.stages.some((s) => s.status === 'failed'));
const failedStage = failedView && [...failedView.stages].sort((a, b) => b.rank - a.rank).find((s) => s.status === 'failed');
const question = fixtures?.questions.find((q) => q.status === 'pending' && q.options.length >= 2);

const waitForGraph = (page) =>
  page.waitForFunction(() => document.querySelector('[data-testid=graph-canvas] svg g.node') !== null);

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
  const at = (hash) => new URL(`index.html${hash}`, base).href;

  profileDir = await mkdtemp(join(tmpdir(), 'weft-ui-chromium-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
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
      'an unknown run says so, with the daemon stopped',
      async (page, errors) => {
        await page.goto(at('#/runs/NO-SUCH-RUN'), { waitUntil: 'load' });
        await page.getByText('No run matches “NO-SUCH-RUN”.').waitFor();
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
    [
      'a failed run: what failed and why, the failed node coloured, jump to the stage',
      failedStage &&
        (async (page, errors) => {
          const reason = failedStage.failure_reason ?? '';
          await page.goto(at(`#/runs/${failedView.run.id}`), { waitUntil: 'load' });
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
          check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
        }),
    ],
    [
      'a pending question: shown from the route, the gate waiting, answered by click',
      question &&
        (async (page, errors) => {
          await page.goto(at(`#/runs/${question.run_id}/question/${question.id}`), { waitUntil: 'load' });
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
          check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
        }),
    ],
    [
      'a pending question answered by its accelerator key',
      question &&
        (async (page, errors) => {
          // The second option, so this cannot pass by answering the first.
          const label = question.options[1];
          const key = acceleratorOf(label) ?? '2';
          await page.goto(at(`#/runs/${question.run_id}`), { waitUntil: 'load' });
          const panel = page.getByTestId('question-panel');
          await panel.waitFor();
          await page.keyboard.press(key.length === 1 ? key.toLowerCase() : '2');
          const done = panel.getByTestId('action-done');
          await done.waitFor();
          const shown = (await done.textContent()) ?? '';
          const text = label.replace(/^\s*(\[[^\]]+\]|[^)\s]+\)|\S+\s+-)\s*/, '');
          check(shown === `Answered: ${text}`, `pressing ${key} should answer “${text}” (got ${JSON.stringify(shown)})`);
          check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
        }),
    ],
    [
      'the gates inbox lists the pending question with its run',
      question &&
        (async (page, errors) => {
          await page.goto(at('#/gates'), { waitUntil: 'load' });
          const panel = page.locator(`[data-testid=question-panel][data-question-id="${question.id}"]`);
          await panel.waitFor();
          check(((await panel.getByTestId('question-text').textContent()) ?? '') === question.text, 'the inbox should show the question text');
          const href = await panel.locator('.question__run').getAttribute('href');
          check(href === `#/runs/${question.run_id}/question/${question.id}`, `the inbox should link to the run's question (got ${href})`);
          check((await panel.locator('.question__option').count()) === question.options.length, 'every option should be a button');
          await page.screenshot({ path: join(resultsDir, 'run-gates.png'), fullPage: true });
          await panel.locator('.question__run').click();
          await page.getByTestId('run-screen').waitFor();
          check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
        }),
    ],
  ];

  for (const [name, run] of tests) {
    if (!run) {
      skipped += 1;
      console.log(
        `browser run: skipped: no recorded fixtures: ${name} (${fixtures ? 'the fixtures have no such run' : `${fixturesPath} is missing`})`,
      );
      continue;
    }
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    try {
      await run(page, errors);
      passed += 1;
      console.log(`browser run: ok: ${name}`);
    } catch (e) {
      failed += 1;
      console.error(`browser run: FAILED: ${name}: ${e instanceof Error ? e.message : String(e)}`);
      await page.screenshot({ path: join(resultsDir, 'run-failure.png'), fullPage: true }).catch(() => {});
    } finally {
      await page.close().catch(() => {});
    }
  }
} catch (e) {
  failed += 1;
  console.error(`browser run: FAILED: ${e instanceof Error ? e.message : String(e)}`);
} finally {
  clearTimeout(watchdog);
  await context?.close().catch(() => {});
  await server?.close().catch(() => {});
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 ? 1 : 0;
