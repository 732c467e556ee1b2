// Browser test of the run graph: serves the built UI (dist/) with `vite
// preview`, opens graph-demo.html in Debian's Chromium through playwright-core
// and checks layout in the worker, decoration, the LR/TB toggle, zoom, that
// edge labels of a small gate (?gate=1) get their own space as drawn, and
// that a 600-node graph (?big=1) renders and keeps the page responsive.
//
// Usage: npm run build && node tests/browser/graph.mjs
// Leaves screenshots in test-results/graph*.png.

import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, STEP_TIMEOUT_MS, suite } from './_harness.mjs';

const BIG_GRAPH_TIMEOUT_MS = 30_000;
/** A click on zoom must show within this, even with 600 nodes on screen. A
 * functional bound (the page is not frozen), not a benchmark. */
const RESPONSIVE_MS = 500;

/** The least space between two drawn edge labels, in SVG units. */
const LABEL_CLEARANCE = 4;

const demoUrl = (base) => new URL('graph-demo.html', base).href;

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

/**
 * What the drawn edge labels overlap, measured in Chromium (getBBox of the
 * text as the browser draws it, not as Graphviz estimated it): other labels
 * (closer than `LABEL_CLEARANCE`, so two never read as one), node shapes,
 * and edge lines. Empty when every label has its own space.
 */
const labelOverlaps = (page) =>
  page.evaluate((clearance) => {
    const svg = document.querySelector('[data-testid=graph-canvas] svg');
    const titleOf = (g) => g.querySelector('title')?.textContent ?? '?';
    const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
    const grown = (b, by) => ({ x: b.x - by, y: b.y - by, width: b.width + 2 * by, height: b.height + 2 * by });
    const labels = [...svg.querySelectorAll('g.edge')].flatMap((g) =>
      [...g.querySelectorAll('text')].map((t) => ({ name: `label "${t.textContent}"`, box: t.getBBox() })),
    );
    const shapes = [...svg.querySelectorAll('g.node')].map((g) => {
      // The shape only: the state glyph and visit badge sit on its corners by design.
      const parts = [...g.children].filter((el) => ['ellipse', 'polygon', 'polyline', 'path', 'rect'].includes(el.localName));
      const boxes = parts.map((el) => el.getBBox());
      const x = Math.min(...boxes.map((b) => b.x));
      const y = Math.min(...boxes.map((b) => b.y));
      const box = { x, y, width: Math.max(...boxes.map((b) => b.x + b.width)) - x, height: Math.max(...boxes.map((b) => b.y + b.height)) - y };
      return { name: `node ${titleOf(g)}`, box };
    });
    const out = [];
    for (const [i, label] of labels.entries()) {
      for (const other of labels.slice(i + 1)) {
        if (hit(grown(label.box, clearance), other.box)) out.push(`${label.name} is within ${clearance} of ${other.name}`);
      }
      for (const other of shapes) {
        if (hit(label.box, other.box)) out.push(`${label.name} overlaps ${other.name}`);
      }
      // An edge line crossing the label's box, by points 1 unit apart.
      const b = label.box;
      for (const path of svg.querySelectorAll('g.edge path')) {
        const length = path.getTotalLength();
        for (let at = 0; at <= length; at += 1) {
          const p = path.getPointAtLength(at);
          if (p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height) {
            out.push(`${label.name} overlaps edge ${titleOf(path.parentElement)}`);
            break;
          }
        }
      }
    }
    return out;
  }, LABEL_CLEARANCE);

await suite(
  'graph',
  [
    [
      'sample workflow: layout in a worker, states, badges, taken edges, toggle, zoom, select',
      async (page, base, errors) => {
        const workers = [];
        page.on('worker', (w) => workers.push(w.url()));
        await page.goto(demoUrl(base), { waitUntil: 'load' });
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
        checkNoErrors(errors);
      },
    ],
    [
      'a small gate: every edge label, drawn bold, clear of the other labels, nodes and edges',
      async (page, base, errors) => {
        await page.goto(`${demoUrl(base)}?gate=1`, { waitUntil: 'load' });
        await waitForLayout(page, 'TB');
        const taken = await page.locator('g.edge[data-taken] text').count();
        check(taken === 4, `all four labels should be drawn as taken (bold), got ${taken}`);
        const tb = await labelOverlaps(page);
        await page.screenshot({ path: join(resultsDir, 'graph-gate-tb.png') });
        check(tb.length === 0, `top to bottom, edge labels overlap:\n  ${tb.join('\n  ')}`);
        await page.getByTestId('graph-rankdir').click();
        await waitForLayout(page, 'LR');
        const lr = await labelOverlaps(page);
        check(lr.length === 0, `left to right, edge labels overlap:\n  ${lr.join('\n  ')}`);
        checkNoErrors(errors);
      },
    ],
    [
      'a 600-node graph renders and the page stays responsive',
      async (page, base, errors) => {
        await page.goto(`${demoUrl(base)}?big=1`, { waitUntil: 'load' });
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
        checkNoErrors(errors);
      },
    ],
  ],
  { viewport: { width: 1000, height: 700 }, page: 'graph-demo.html' },
);
