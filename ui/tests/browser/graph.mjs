// Browser test of the run graph: serves the built UI (dist/) with `vite
// preview`, opens graph-demo.html in Debian's Chromium through playwright-core
// and checks layout in the worker, decoration, the LR/TB toggle, zoom, and
// that a 600-node graph (?big=1) renders and keeps the page responsive.
//
// Usage: npm run build && node tests/browser/graph.mjs
// Leaves screenshots in test-results/graph*.png.

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
const BIG_GRAPH_TIMEOUT_MS = 30_000;
const WHOLE_TEST_TIMEOUT_MS = 120_000;
/** A click on zoom must show within this, even with 600 nodes on screen. A
 * functional bound (the page is not frozen), not a benchmark. */
const RESPONSIVE_MS = 500;

let passed = 0;
let failed = 0;

function bail(message) {
  console.error(`browser graph: FAILED: ${message}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}

if (!existsSync(join(uiDir, 'dist', 'graph-demo.html'))) {
  bail('ui/dist/graph-demo.html is missing; run `npm run build` first');
}
if (!existsSync(CHROMIUM)) {
  bail(`no Chromium at ${CHROMIUM}; install Debian's chromium package (or set CHROMIUM)`);
}

// A hung browser or server must not hang `make test`.
const watchdog = setTimeout(() => bail(`no result after ${WHOLE_TEST_TIMEOUT_MS / 1000} s`), WHOLE_TEST_TIMEOUT_MS);

function check(condition, why) {
  if (!condition) throw new Error(why);
}

/** Width / height of the rendered SVG's viewBox. */
const aspect = (page) =>
  page.locator('[data-testid=graph-canvas] svg').evaluate((svg) => {
    const { width, height } = svg.viewBox.baseVal;
    return width / height;
  });

const transformOf = (page) =>
  page.getByTestId('graph-canvas').evaluate((el) => el.style.transform);

/** Waits until the canvas holds an SVG laid out in `rankdir`. */
const waitForLayout = (page, rankdir, timeout = STEP_TIMEOUT_MS) =>
  page.waitForFunction(
    (dir) => {
      const canvas = document.querySelector('[data-testid=graph-canvas]');
      return canvas?.getAttribute('data-rankdir') === dir && canvas.querySelector('svg g.node') !== null;
    },
    rankdir,
    { timeout },
  );

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
  const demoUrl = new URL('graph-demo.html', base).href;

  profileDir = await mkdtemp(join(tmpdir(), 'weft-ui-chromium-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1000, height: 700 },
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
      'sample workflow: layout in a worker, states, badges, taken edges, toggle, zoom, select',
      async (page, errors) => {
        const workers = [];
        page.on('worker', (w) => workers.push(w.url()));
        await page.goto(demoUrl, { waitUntil: 'load' });
        await waitForLayout(page, 'TB');
        check(workers.some((u) => u.includes('layout.worker')), `layout ran without a worker (workers: ${workers})`);

        const review = page.locator('g.node[data-node-id="review"]');
        check((await review.getAttribute('data-state')) === 'failed', 'node review should be failed');
        check((await review.locator('.wf-glyph').textContent()) === '✕', 'failed node should carry the ✕ glyph');
        const badge = page.locator('g.node[data-node-id="implement"] .wf-badge');
        check((await badge.textContent()) === 'implement@2', 'implement, visited twice, should show implement@2');
        check(await badge.isVisible(), 'the implement@2 badge should be visible');

        const takenCount = await page.locator('g.edge[data-taken="true"]').count();
        check(takenCount === 10, `expected 10 taken edges, got ${takenCount}`);
        const [takenStroke, plainStroke] = await page.evaluate(() => {
          const stroke = (sel) => getComputedStyle(document.querySelector(sel)).strokeWidth;
          return [stroke('g.edge[data-taken] path'), stroke('g.edge:not([data-taken]) path')];
        });
        check(parseFloat(takenStroke) > parseFloat(plainStroke), `taken edges should be drawn heavier (${takenStroke} vs ${plainStroke})`);
        await page.screenshot({ path: join(resultsDir, 'graph-tb.png') });

        // The workflow says rankdir=LR; the view starts TB, so TB must have won.
        const tb = await aspect(page);
        check(tb < 1, `TB layout should be taller than wide (aspect ${tb.toFixed(2)})`);
        await page.getByTestId('graph-rankdir').click();
        await waitForLayout(page, 'LR');
        const lr = await aspect(page);
        check(lr > 1, `LR layout should be wider than tall (aspect ${lr.toFixed(2)})`);
        check((await review.getAttribute('data-state')) === 'failed', 'decoration should survive the re-layout');
        await page.screenshot({ path: join(resultsDir, 'graph-lr.png') });

        const before = await transformOf(page);
        await page.getByTestId('graph-zoom-in').click();
        const zoomedIn = await transformOf(page);
        check(zoomedIn !== before && /scale\(/.test(zoomedIn), `zoom in should change the transform (${before} -> ${zoomedIn})`);
        await page.getByTestId('graph-zoom-out').click();
        await page.getByTestId('graph-zoom-out').click();
        check((await transformOf(page)) !== zoomedIn, 'zoom out should change the transform');
        await page.mouse.move(500, 400);
        const beforeWheel = await transformOf(page);
        await page.mouse.wheel(0, -300);
        await page.waitForFunction((t) => document.querySelector('[data-testid=graph-canvas]').style.transform !== t, beforeWheel);

        await page.getByTestId('graph-fit').click();
        await page.locator('g.node[data-node-id="approve"]').click();
        const selected = (await page.getByTestId('selected-node').textContent())?.trim();
        check(selected === 'Selected: approve', `clicking a node should select it (got ${JSON.stringify(selected)})`);
        check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
      },
    ],
    [
      'a 600-node graph renders and the page stays responsive',
      async (page, errors) => {
        await page.goto(`${demoUrl}?big=1`, { waitUntil: 'load' });
        // Until the layout arrives the main thread must stay free: the worker does the work.
        const frameGap = await page.evaluate(() => {
          const t0 = performance.now();
          return new Promise((done) => requestAnimationFrame(() => done(performance.now() - t0)));
        });
        check(frameGap < RESPONSIVE_MS, `a frame took ${frameGap.toFixed(0)} ms while laying out`);
        await waitForLayout(page, 'TB', BIG_GRAPH_TIMEOUT_MS);
        const nodes = await page.locator('g.node').count();
        check(nodes === 600, `expected 600 nodes, got ${nodes}`);
        const running = await page.locator('g.node[data-state="running"]').count();
        check(running === 1, `expected one running node, got ${running}`);

        const before = await transformOf(page);
        const t0 = Date.now();
        await page.getByTestId('graph-zoom-in').click();
        await page.waitForFunction(
          (t) => document.querySelector('[data-testid=graph-canvas]').style.transform !== t,
          before,
          { timeout: RESPONSIVE_MS },
        );
        const took = Date.now() - t0;
        await page.screenshot({ path: join(resultsDir, 'graph-big.png') });
        console.log(`  600 nodes: zoom click reflected in ${took} ms`);
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
      console.log(`browser graph: ok: ${name}`);
    } catch (e) {
      failed += 1;
      console.error(`browser graph: FAILED: ${name}: ${e instanceof Error ? e.message : String(e)}`);
      await page.screenshot({ path: join(resultsDir, 'graph-failure.png') }).catch(() => {});
    } finally {
      await page.close().catch(() => {});
    }
  }
} catch (e) {
  failed += 1;
  console.error(`browser graph: FAILED: ${e instanceof Error ? e.message : String(e)}`);
} finally {
  clearTimeout(watchdog);
  await context?.close().catch(() => {});
  await server?.close().catch(() => {});
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
